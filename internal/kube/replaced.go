package kube

import (
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Replaced reports whether a write with the UID read as precondition (a
// server-side apply carrying metadata.uid, a delete with Preconditions)
// was refused because that object is gone: not found; a failed UID
// precondition (a Conflict without field-manager causes, which a
// field-ownership conflict always has); or metadata.uid rejected as
// Invalid (the UID names a predecessor of the object now at that name).
// Such a write must not be retried as is: the object was deleted, or
// deleted and re-created by someone else.
func Replaced(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	var causes []metav1.StatusCause
	if d := status.Status().Details; d != nil {
		causes = d.Causes
	}
	switch {
	case apierrors.IsConflict(err):
		return !slices.ContainsFunc(causes, func(c metav1.StatusCause) bool { return c.Type == metav1.CauseTypeFieldManagerConflict })
	case apierrors.IsInvalid(err):
		return slices.ContainsFunc(causes, func(c metav1.StatusCause) bool { return c.Field == "metadata.uid" })
	}
	return false
}
