package podtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// reporterMemoryCeiling is twice the reporter's goal (24 MiB VmRSS, as the
// pod runs it): the check fails only far above the goal, never on noise.
const reporterMemoryCeiling = 48

// checkReporterMemory logs the memory of the reporter container's process
// as the node's kernel sees it (VmRSS, RssAnon, RssFile from
// /proc/<pid>/status, and the container cgroup's working set), and checks
// that the container runs the image's reporter build.
func checkReporterMemory(t *testing.T, node *testenv.Node, namespace string, selector map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		pods, err := runningPods(ctx, namespace, selector)
		if err != nil {
			return err
		}
		for i := range pods {
			p, err := node.ContainerProcess(ctx, &pods[i], reporterinstall.ContainerName)
			if err != nil {
				return err
			}
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
			if err != nil {
				return err
			}
			if !strings.HasSuffix(exe, reporterinstall.Command) {
				return fmt.Errorf("pod %s runs %s, want the image's reporter build %s", pods[i].Name, exe, reporterinstall.Command)
			}
			rss, err := devenv.RSS(p.PID)
			if err != nil {
				return err
			}
			t.Logf("reporter pod %s (%s): %s; container working set %.1f MiB", pods[i].Name, exe, rss, float64(p.WorkingSet)/(1<<20))
			if vm := float64(p.VmRSS) / (1 << 20); vm > reporterMemoryCeiling {
				return fmt.Errorf("reporter pod %s: VmRSS %.1f MiB, far above the 24 MiB goal (ceiling %d MiB)", pods[i].Name, vm, reporterMemoryCeiling)
			}
		}
		return nil
	}
}
