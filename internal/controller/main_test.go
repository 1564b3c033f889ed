package controller

import (
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// env is the package's API server: the streams' reads of real watch
// responses (rawwatch_apiserver_test.go) run against it.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, func(e *testenv.Env) { env = e }) }
