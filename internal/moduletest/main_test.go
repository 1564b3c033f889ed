package moduletest

import (
	"os"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// east and west are the two clusters a caller manages
// (TestAccModule_twoClusters); single is the cluster of the module's own
// `tofu test` suite (TestAccModule_tofuTest). The two tests install the
// same cluster-scoped objects (the KMSHealth CRD, the admission policies),
// so each has clusters of its own and they run in parallel.
var east, west, single *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") == "" {
		// Every test here is an acceptance test and skips without TF_ACC,
		// like terraform-plugin-testing's: start no control plane for them.
		os.Exit(m.Run())
	}
	testenv.MainN(m, 3, func(envs []*testenv.Env) { east, west, single = envs[0], envs[1], envs[2] })
}
