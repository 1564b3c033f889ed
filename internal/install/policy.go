package install

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/discovery"
)

// Policy is a ValidatingAdmissionPolicy that binds one ServiceAccount: the
// API server, not kmshealth's code, then decides which fields that
// identity may change, whatever its token is used for.
type Policy struct {
	Name   string
	Labels map[string]string
	// ServiceAccount is namespace/name of the only identity the policy
	// applies to.
	ServiceAccount string
	// Group and Resources (e.g. "kmshealths/status") it matches, for the
	// operations given.
	Group      string
	Resources  []string
	Operations []admissionregistrationv1.OperationType
	Variables  [][2]string // name, CEL expression
	Rules      []PolicyRule
}

// PolicyRule is one validation: the expression must hold, else the
// request is denied (403) with the message.
type PolicyRule struct {
	Expression string
	Message    string // a fixed message, or
	MessageCEL string // one computed by CEL
}

// UnchangedBut is a CEL expression that holds when the maps newMap and
// oldMap (CEL expressions) differ at most at the keys in except (a CEL
// list expression): no other key added, removed or changed. The policies
// say field by field what an identity may change with it.
func UnchangedBut(newMap, oldMap, except string) string {
	return fmt.Sprintf("%[1]s.all(k, k in %[3]s || (k in %[2]s && %[1]s[k] == %[2]s[k])) && %[2]s.all(k, k in %[3]s || k in %[1]s)", newMap, oldMap, except)
}

// ValidatingAdmissionPolicy is the policy's apply configuration. It fails
// closed: an expression that errors denies.
func (p Policy) ValidatingAdmissionPolicy() *admissionregistrationv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	ns, name := splitServiceAccount(p.ServiceAccount)
	spec := admissionregistrationv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionregistrationv1.Fail).
		// matchConstraints is atomic: the API server's defaults are spelled
		// out, or the fields kmshealth owns would differ from what it applied.
		WithMatchConstraints(admissionregistrationv1ac.MatchResources().
			WithNamespaceSelector(metav1ac.LabelSelector()).
			WithObjectSelector(metav1ac.LabelSelector()).
			WithMatchPolicy(admissionregistrationv1.Equivalent).
			WithResourceRules(admissionregistrationv1ac.NamedRuleWithOperations().
				WithAPIGroups(p.Group).WithAPIVersions("*").WithResources(p.Resources...).WithOperations(p.Operations...).
				WithScope(admissionregistrationv1.AllScopes))).
		WithMatchConditions(admissionregistrationv1ac.MatchCondition().
			WithName("only-" + name).
			WithExpression(fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", ns, name)))
	for _, v := range p.Variables {
		spec.WithVariables(admissionregistrationv1ac.Variable().WithName(v[0]).WithExpression(v[1]))
	}
	for _, r := range p.Rules {
		v := admissionregistrationv1ac.Validation().WithExpression(r.Expression).WithReason(metav1.StatusReasonForbidden)
		if r.MessageCEL != "" {
			v.WithMessageExpression(r.MessageCEL)
		} else {
			v.WithMessage(r.Message)
		}
		spec.WithValidations(v)
	}
	return admissionregistrationv1ac.ValidatingAdmissionPolicy(p.Name).WithLabels(p.Labels).WithSpec(spec)
}

// Binding binds the policy cluster-wide, denying what it does not allow.
func (p Policy) Binding() *admissionregistrationv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionregistrationv1ac.ValidatingAdmissionPolicyBinding(p.Name).WithLabels(p.Labels).
		WithSpec(admissionregistrationv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(p.Name).
			WithValidationActions(admissionregistrationv1.Deny))
}

// Objects are the policy and its binding, in apply order.
func (p Policy) Objects() []Object {
	return []Object{
		{ID: ID{Kind: ValidatingAdmissionPolicies, Name: p.Name}, Body: p.ValidatingAdmissionPolicy()},
		{ID: ID{Kind: ValidatingAdmissionPolicyBindings, Name: p.Name}, Body: p.Binding()},
	}
}

func splitServiceAccount(sa string) (namespace, name string) {
	for i := range len(sa) {
		if sa[i] == '/' {
			return sa[:i], sa[i+1:]
		}
	}
	return "", sa
}

// AdmissionPoliciesServed reports whether the API server serves
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (GA since
// Kubernetes 1.30): one discovery request, made at apply time only.
func AdmissionPoliciesServed(ctx context.Context, d discovery.DiscoveryInterface) (bool, error) {
	_ = ctx // discovery takes no context
	list, err := d.ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", admissionregistrationv1.SchemeGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "validatingadmissionpolicies" {
			return true, nil
		}
	}
	return false, nil
}
