// Package nodetest proves the test bed's node: pods start from images
// imported from tarballs, reach the API server through the `kubernetes`
// Service, and nothing they send leaves the machine.
package nodetest

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.MainWithNode(m, func(e *testenv.Env) { env = e })
}

func TestNodeReady(t *testing.T) {
	ctx := context.Background()
	node, err := env.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s Ready in %s, image %s", node.Name, node.StartTime, node.Image)
}

// Nothing a pod or the node sends can leave the machine: the node's network
// namespace has loopback, the pods' bridge and the pods' veth ends, and no
// route but the bridge's own subnet; an address in the service range that
// no Service has fails at once.
func TestNodeNothingLeaves(t *testing.T) {
	if _, err := env.Node(context.Background()); err != nil {
		t.Fatal(err)
	}
	// From netlink: /sys/class/net shows the netns that mounted /sys.
	links, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if n := l.Name; n != "lo" && n != testenv.BridgeName && !strings.HasPrefix(n, "veth") {
			t.Errorf("interface %s in the node's network namespace: only lo, %s and pods' veths belong there", n, testenv.BridgeName)
		}
	}
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(routes)), "\n")[1:] {
		// Iface Destination Gateway ...: hex, little-endian; 0A F4 00 00 is 10.244.0.0
		if f := strings.Fields(line); len(f) < 3 || f[0] != testenv.BridgeName || f[1] != "0000F40A" || f[2] != "00000000" {
			t.Errorf("route %q in the node's network namespace: only %s on %s belongs there", line, testenv.PodCIDR, testenv.BridgeName)
		}
	}
	start := time.Now()
	c, err := net.DialTimeout("tcp", "10.96.200.200:443", 5*time.Second)
	if err == nil {
		_ = c.Close()
		t.Fatal("connected to an unused cluster IP")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("dial to an unused cluster IP took %s to fail (%v): it should fail at once", d, err)
	}
	t.Logf("unused cluster IP: %v", err)
}
