package kube

// FieldManager is the server-side apply field manager of every kmshealth
// write, in the Terraform resources and the reconciler alike, so the two
// never take a field from each other and a destroy releases what either
// wrote. The documented exceptions (ARCHITECTURE.md, "Field managers"):
//   - the caBundle resources' field_manager attribute may name another
//     manager; kmshealth_reconciler's field_manager (--field-manager) must
//     then name the same one, and it means exactly that: the manager of
//     the caBundles it keeps, no other pattern's;
//   - the TLS profile's hash annotation on rollout targets has its own
//     manager, so applying it never drops another kmshealth field of the
//     same workload;
//   - each KMS reporter writes its node's condition under a manager of its
//     own, derived from the node name.
const FieldManager = "kmshealth"

// ManagedByLabel = ManagedByValue marks the objects kmshealth created and
// may delete (with the installers' own labels, see install.Owner).
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kmshealth"
)
