package moduletest

import (
	"os"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// east and west are the two clusters a caller manages (TestMain).
var east, west *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") == "" {
		// Every test here is an acceptance test and skips without TF_ACC,
		// like terraform-plugin-testing's: start no control plane for them.
		os.Exit(m.Run())
	}
	testenv.MainN(m, 2, func(envs []*testenv.Env) { east, west = envs[0], envs[1] })
}
