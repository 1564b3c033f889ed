package reencrypt

// TEMPORARY: the StorageVersionMigration path is written on branch svm
// (internal/reencrypt/svm.go). Delete this file when merging that branch.

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// StorageVersionMigrationAvailable is a stand-in until branch svm lands.
func StorageVersionMigrationAvailable(context.Context, *rest.Config) (ok bool, why string, err error) {
	return false, "not built", nil
}

// MigrateWithSVM is a stand-in until branch svm lands.
func MigrateWithSVM(context.Context, *rest.Config, schema.GroupVersionResource, string, func(format string, args ...any)) error {
	return errors.New("the StorageVersionMigration path is not built")
}
