package kube

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestReplaced: the API server's answers to a UID-preconditioned write
// (their shapes as kube-apiserver builds them) are told apart from the
// other refusals. The API server's own behaviour is exercised by the
// pattern packages' tests (cabundle's stale-object and deletion-race tests).
func TestReplaced(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	uidConflict := apierrors.NewConflict(gr, "web", errors.New("Precondition failed: UID in precondition: a, UID in object meta: b"))
	ownership := apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "helm"`, Field: ".spec.replicas"}}, "Apply failed with 1 conflict")
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	uidInvalid := apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "a", "field is immutable")})
	otherInvalid := apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"not found", apierrors.NewNotFound(gr, "web"), true},
		{"not found, wrapped", fmt.Errorf("apply: %w", apierrors.NewNotFound(gr, "web")), true},
		{"UID precondition failed", uidConflict, true},
		{"metadata.uid rejected", uidInvalid, true},
		{"field ownership conflict", ownership, false},
		{"other validation error", otherInvalid, false},
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("no")), false},
		{"not an API error", errors.New("connection refused"), false},
		{"nil", nil, false},
	} {
		if got := Replaced(tc.err); got != tc.want {
			t.Errorf("%s: Replaced(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
