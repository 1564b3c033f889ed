package tlsprofile_test

import (
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// env is the package's one control plane: real etcd and kube-apiserver,
// for Ensure's tests; the other tests need none.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, func(e *testenv.Env) { env = e })
}
