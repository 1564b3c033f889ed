// Command pause is the node's pod sandbox: it holds a pod's namespaces and
// does nothing else until it is told to stop. The test bed packages it as
// the sandbox image, since the node never pulls one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
