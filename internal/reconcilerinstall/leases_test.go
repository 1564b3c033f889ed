package reconcilerinstall

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// TestTwoReconcilersInOneNamespace installs two reconcilers of different
// names in one namespace, each keeping its own APIService, and runs both
// at once as the real binary with the installed Deployment's arguments
// (Args), authenticated as the installed ServiceAccount with a pod-bound
// token, under the admission policies. Each must lead on its own Lease and
// restore its own caBundle: while they shared one Lease, one of the two
// never led and its objects were never kept.
func TestTwoReconcilersInOneNamespace(t *testing.T) {
	ctx := context.Background()
	core := env.Clientset()
	agg := aggregator.NewForConfigOrDie(env.RESTConfig())
	const ns = "two-reconcilers"
	createNamespace(t, core, ns)
	binary, err := devenv.BuildProvider(ctx, t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}

	type installation struct {
		c   Config
		api *apiregv1.APIService
		ca  []byte
	}
	var all []installation
	for _, name := range []string{"alpha", "beta"} {
		ca := testpki.MustCertPEM(name+" CA", testpki.Options{})
		src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: ns, Name: name + "-ca", Key: "ca.crt"}
		if _, err := core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: src.Name}, Data: map[string]string{src.Key: string(ca)},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		api := createAPIService(t, agg, "lease-"+name)
		if _, _, err := cabundle.Ensure(ctx, agg.ApiregistrationV1(), api, ca, src, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager}); err != nil {
			t.Fatal(err)
		}
		c := Config{Namespace: ns, Name: name, Image: install.DefaultImage("test"), Replicas: 1, AdmissionPolicy: true,
			CABundles: map[string]cabundle.Source{api.Name: src}}
		mustApply(t, c)
		t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })
		all = append(all, installation{c: c, api: api, ca: ca})
	}
	if all[0].c.Lease() == all[1].c.Lease() {
		t.Fatalf("both installations use the Lease %q", all[0].c.Lease())
	}

	for _, in := range all {
		runInstalled(t, binary, in.c)
	}
	// Each leads on its own Lease: both run, neither waits for the other.
	for _, in := range all {
		waitLease(t, ns, in.c.Lease(), func(l *coordinationv1.Lease) bool {
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == in.c.Name
		})
	}

	// An installer overwrites both caBundles: each is restored, and only
	// its own reconciler may patch it (RBAC resourceNames), so each
	// reconciler keeps its own objects.
	impostor := testpki.MustCertPEM("impostor", testpki.Options{})
	apis := agg.ApiregistrationV1().APIServices()
	for _, in := range all {
		live, err := apis.Get(ctx, in.api.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Spec.CABundle = impostor
		if _, err := apis.Update(ctx, live, metav1.UpdateOptions{FieldManager: "installer"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range all {
		lw := kube.ListWatch(apis.List, apis.Watch, func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + in.api.Name })
		if err := until(lw, &apiregv1.APIService{}, 30*time.Second, func(s *apiregv1.APIService) bool {
			return bytes.Equal(s.Spec.CABundle, in.ca)
		}); err != nil {
			t.Errorf("reconciler %q did not restore the caBundle of %s: %v", in.c.Name, in.api.Name, err)
		}
	}
}

// runInstalled runs the reconciler installation c as a process of binary
// (there is no kubelet): the Deployment's own arguments, the ports moved
// to free loopback ones, a kubeconfig with the installed ServiceAccount's
// pod-bound token, and c.Name as its leader-election identity. It is
// stopped when the test ends; its log is printed when the test failed.
func runInstalled(t *testing.T, binary string, c Config) {
	t.Helper()
	var args []string
	for _, a := range Args(c) {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="), strings.HasPrefix(a, "--health-probe-bind-address="):
			name, _, _ := strings.Cut(a, "=")
			args = append(args, name+"=127.0.0.1:0")
		default:
			args = append(args, strings.ReplaceAll(a, "$("+podNamespaceEnv+")", c.Namespace)) // as the kubelet expands it
		}
	}
	// A token bound to a pod on a node, as the kubelet requests it.
	nodes := env.Clientset().CoreV1().Nodes()
	node := "node-" + c.Namespace + "-" + c.Name
	if _, err := nodes.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes.Delete(context.Background(), node, metav1.DeleteOptions{}) })
	token := testenv.PodToken(t, env.Clientset(), c.Namespace, c.ServiceAccountName(), node)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Host, CertificateAuthorityData: env.CAPEM}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--kubeconfig="+path, "--leader-elect-identity="+c.Name)

	log := &devenv.SyncBuffer{}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), podNamespaceEnv+"="+c.Namespace)
	cmd.Stdout, cmd.Stderr = log, log
	p, err := devenv.StartCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("reconciler %q %q log:\n%s", c.Name, args, log.String())
		}
	})
}

// waitLease watches Lease ns/name until cond holds.
func waitLease(t *testing.T, ns, name string, cond func(*coordinationv1.Lease) bool) {
	t.Helper()
	leases := env.Clientset().CoordinationV1().Leases(ns)
	lw := kube.ListWatch(leases.List, leases.Watch, func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name })
	if err := until(lw, &coordinationv1.Lease{}, 30*time.Second, cond); err != nil {
		t.Fatalf("Lease %s/%s: no leader within 30s: %v", ns, name, err)
	}
}

// until watches the objects of lw until cond holds for one, or limit passes.
func until[T runtime.Object](lw cache.ListerWatcher, obj T, limit time.Duration, cond func(T) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_, err := watchtools.UntilWithSync(ctx, lw, obj, func(s cache.Store) (bool, error) {
		for _, o := range s.List() {
			if v, ok := o.(T); ok && cond(v) {
				return true, nil
			}
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) {
		v, ok := ev.Object.(T)
		return ok && ev.Type != watch.Deleted && cond(v), nil
	})
	return err
}
