package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

// TestControllersStartAgainOnATakenPort takes the port kube-controller-
// manager is about to bind, as another process on a busy machine can
// between devenv.FreePorts and the bind: the start must move it to a new
// port and succeed, and the first attempt's failure must be in its log.
func TestControllersStartAgainOnATakenPort(t *testing.T) {
	running, port := env.controllers, env.controllersPort
	takenPort := takePort(t)
	env.controllersPort = takenPort

	err := env.startControllers(t.Context())
	started := env.controllers
	// The package's own controller manager stays the one its other tests
	// use; the one started here is stopped.
	t.Cleanup(func() {
		stop(started)
		env.controllers, env.controllersPort = running, port
	})
	if err != nil {
		t.Fatalf("start with its port taken: %v", err)
	}
	if env.controllersPort == takenPort {
		t.Fatalf("kube-controller-manager answered on port %d, which this test holds", takenPort)
	}
	checkBindFailureLogged(t, filepath.Join(env.Dir, "kube-controller-manager.log"), takenPort)
}

// takePort listens on a free loopback port until t ends and returns it:
// a port another process bound between devenv.FreePorts and the bind.
func takePort(t *testing.T) int {
	t.Helper()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = taken.Close() })
	return taken.Addr().(*net.TCPAddr).Port
}

// checkBindFailureLogged fails t unless the log at path holds the failed
// bind of 127.0.0.1:port: the first attempt's failure, kept for whoever
// reads the log.
func checkBindFailureLogged(t *testing.T, path string, port int) {
	t.Helper()
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("127.0.0.1:%d: bind: address already in use", port); !strings.Contains(string(log), want) {
		t.Errorf("the first attempt should have failed on the taken port: no %q in %s", want, filepath.Base(path))
	}
}

// TestAPIServerStartsAgainOnATakenPort takes the port a control plane's
// kube-apiserver is about to bind, as another process on a busy machine
// can between devenv.FreePorts and the bind: the first start must move it
// to a new port and come up there, and the first attempt's failure must be
// in its log. The second API server serves the package's etcd, as an HA
// pair would, and is stopped at the end.
func TestAPIServerStartsAgainOnATakenPort(t *testing.T) {
	takenPort := takePort(t)
	args := slices.DeleteFunc(slices.Clone(env.apiArgs), func(a string) bool { return strings.HasPrefix(a, "--secure-port=") })
	second := &Env{Dir: t.TempDir(), binary: env.binary, lean: env.lean, CAPEM: env.CAPEM, Token: env.Token, apiArgs: args}
	t.Cleanup(func() { stop(second.apiserver) })

	if err := second.startFirstAPIServer(t.Context(), takenPort); err != nil {
		t.Fatalf("start with its port taken: %v", err)
	}
	if want := fmt.Sprintf("https://127.0.0.1:%d", takenPort); second.Host == want {
		t.Fatalf("kube-apiserver answered at %s, whose port this test holds", want)
	}
	checkBindFailureLogged(t, filepath.Join(second.Dir, "apiserver.log"), takenPort)
}

// TestEtcdStartsAgainOnATakenPort takes the client port a control plane's
// etcd is about to bind: the start must move it to new ports, answer
// /readyz there, and keep the first attempt's failure in its log. The
// second etcd is stopped at the end.
func TestEtcdStartsAgainOnATakenPort(t *testing.T) {
	takenPort := takePort(t)
	peer, err := devenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	second := &Env{Dir: t.TempDir(), binary: env.binary, lean: env.lean}
	t.Cleanup(func() { stop(second.etcd) })

	if err := second.startEtcd(t.Context(), []int{takenPort, peer[0]}); err != nil {
		t.Fatalf("start with its client port taken: %v", err)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", takenPort); second.EtcdEndpoint == want {
		t.Fatalf("etcd answered at %s, whose port this test holds", want)
	}
	checkBindFailureLogged(t, filepath.Join(second.Dir, "etcd.log"), takenPort)
}
