package reencrypt_test

import (
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// env is the package's one control plane: real etcd and kube-apiserver,
// Secrets (and, with the svm branch's test bed, ConfigMaps) encrypted
// through the KMS v2 test plugin. Tests that rotate the plugin's key share
// it, so they run serially (none calls t.Parallel) and each starts by
// setting the key it needs.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, func(e *testenv.Env) { env = e })
}
