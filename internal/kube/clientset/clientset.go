// Package clientset holds the typed API clients this project calls, and only
// those: the part of client-go's, kube-aggregator's and
// apiextensions-apiserver's clientsets that the patterns, the installer and
// the reconciler use.
//
// The full clientsets satisfy these interfaces, so the provider passes its
// own unchanged. A binary that builds its clients with NewCore,
// NewAggregator and NewExtensions instead (the reconciler, the image's
// binary) never makes a *kubernetes.Clientset, so the linker drops the
// typed clients of the fifty-odd groups it never calls, with their apply
// configurations and generic client code: the in-cluster build's file, and
// with it the pages the kernel maps, is that much smaller (BENCHMARKS.md,
// "Slim in-cluster build").
//
// Not in package kube: a typed client links client-go's scheme of every
// built-in group, which the reporter's build, importing kube, must not.
package clientset

import (
	"fmt"
	"net/http"

	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/client-go/discovery"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	apiregistrationv1client "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
)

// Core is the part of kubernetes.Interface this project calls; a
// kubernetes.Interface is a Core.
type Core interface {
	CoreV1() corev1client.CoreV1Interface
	AppsV1() appsv1client.AppsV1Interface
	AdmissionregistrationV1() admissionregistrationv1client.AdmissionregistrationV1Interface
	Discovery() discovery.DiscoveryInterface
}

// Aggregator is the part of kube-aggregator's clientset this project
// calls (APIServices); its clientset.Interface is an Aggregator.
type Aggregator interface {
	ApiregistrationV1() apiregistrationv1client.ApiregistrationV1Interface
}

// Extensions is the part of apiextensions-apiserver's clientset this
// project calls (CustomResourceDefinitions); its clientset.Interface is an
// Extensions.
type Extensions interface {
	ApiextensionsV1() apiextensionsv1client.ApiextensionsV1Interface
}

// NewCore builds a Core as kubernetes.NewForConfig builds its clientset:
// one HTTP client and one rate limiter (cfg's QPS and Burst) shared by the
// groups.
func NewCore(cfg *rest.Config) (Core, error) {
	c, hc, err := shared(cfg)
	if err != nil {
		return nil, err
	}
	var cs core
	if cs.core, err = corev1client.NewForConfigAndClient(c, hc); err != nil {
		return nil, fmt.Errorf("core/v1 client: %w", err)
	}
	if cs.apps, err = appsv1client.NewForConfigAndClient(c, hc); err != nil {
		return nil, fmt.Errorf("apps/v1 client: %w", err)
	}
	if cs.admission, err = admissionregistrationv1client.NewForConfigAndClient(c, hc); err != nil {
		return nil, fmt.Errorf("admissionregistration.k8s.io/v1 client: %w", err)
	}
	if cs.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(c, hc); err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return cs, nil
}

// NewAggregator builds an Aggregator as kube-aggregator's NewForConfig
// builds its clientset (its own HTTP client and rate limiter).
func NewAggregator(cfg *rest.Config) (Aggregator, error) {
	c, hc, err := shared(cfg)
	if err != nil {
		return nil, err
	}
	v1, err := apiregistrationv1client.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("apiregistration.k8s.io/v1 client: %w", err)
	}
	return aggregator{v1}, nil
}

// NewExtensions builds an Extensions as apiextensions-apiserver's
// NewForConfig builds its clientset (its own HTTP client and rate limiter).
func NewExtensions(cfg *rest.Config) (Extensions, error) {
	c, hc, err := shared(cfg)
	if err != nil {
		return nil, err
	}
	v1, err := apiextensionsv1client.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("apiextensions.k8s.io/v1 client: %w", err)
	}
	return extensions{v1}, nil
}

// shared is what a generated clientset's NewForConfig shares among its
// groups: a copy of cfg with the default user agent and one token-bucket
// rate limiter, and one HTTP client.
func shared(cfg *rest.Config) (*rest.Config, *http.Client, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, nil, fmt.Errorf("HTTP client for the API server: %w", err)
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, nil, fmt.Errorf("REST config: Burst is %d: it must be above 0 when QPS (%g) is set", c.Burst, c.QPS)
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	return &c, hc, nil
}

type core struct {
	core      *corev1client.CoreV1Client
	apps      *appsv1client.AppsV1Client
	admission *admissionregistrationv1client.AdmissionregistrationV1Client
	discovery *discovery.DiscoveryClient
}

func (c core) CoreV1() corev1client.CoreV1Interface { return c.core }
func (c core) AppsV1() appsv1client.AppsV1Interface { return c.apps }
func (c core) AdmissionregistrationV1() admissionregistrationv1client.AdmissionregistrationV1Interface {
	return c.admission
}
func (c core) Discovery() discovery.DiscoveryInterface { return c.discovery }

type aggregator struct {
	v1 *apiregistrationv1client.ApiregistrationV1Client
}

func (a aggregator) ApiregistrationV1() apiregistrationv1client.ApiregistrationV1Interface {
	return a.v1
}

type extensions struct {
	v1 *apiextensionsv1client.ApiextensionsV1Client
}

func (e extensions) ApiextensionsV1() apiextensionsv1client.ApiextensionsV1Interface { return e.v1 }
