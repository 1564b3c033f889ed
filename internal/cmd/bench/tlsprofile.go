package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

const tlsProfileUsage = "tlsprofile [-changes=50]"

type tlsProfileOptions struct{ changes int }

func parseTLSProfileFlags(args []string) (tlsProfileOptions, error) {
	var o tlsProfileOptions
	fs := flag.NewFlagSet("tlsprofile", flag.ContinueOnError)
	fs.IntVar(&o.changes, "changes", 50, "cluster profile changes to time")
	if err := parseFlags(fs, args, tlsProfileUsage); err != nil {
		return o, err
	}
	return o, atLeast1(intFlag{"changes", o.changes})
}

// run measures how fast a TLS profile changed on OpenShift's APIServer
// object reaches the profile ConfigMap and its rollout target's pod
// template, with the real binary in reconcile mode against the real API
// server (the APIServer CRD installed there): -changes times, alternating
// Intermediate and Modern, from the update's response to the watch event
// of the target carrying the new hash.
func (o tlsProfileOptions) run(ctx context.Context, out io.Writer) error {
	bin, env, cleanup, err := binaryAndControlPlane(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	core := kubernetes.NewForConfigOrDie(env.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(env.RESTConfig())
	version, _ := core.Discovery().ServerVersion()
	_, _ = fmt.Fprintf(out, "TLS profile benchmark: kube-apiserver %s, %d CPUs, %s, %s\n\n", version, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))

	remove, err := testenv.InstallAPIServerAPI(ctx, dyn, map[string]any{"tlsSecurityProfile": map[string]any{"type": "Intermediate"}})
	if err != nil {
		return err
	}
	defer remove()

	const name = "bench-tls"
	labels := map[string]string{"app": name}
	if _, err := core.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	target := tlsprofile.Target{Kind: "Deployment", Namespace: "default", Name: name}
	resolve := func(t tlsprofile.ProfileType) (tlsprofile.Resolved, error) {
		r, _, err := tlsprofile.Resolve(tlsprofile.Spec{Type: t, Source: tlsprofile.SourceCluster}, tlsprofile.AdherenceNoOpinion)
		return r, err
	}
	first, err := resolve(tlsprofile.ProfileIntermediate)
	if err != nil {
		return err
	}
	ac, err := tlsprofile.ConfigMap("default", name, tlsprofile.Spec{Source: tlsprofile.SourceCluster}, first, []tlsprofile.Target{target})
	if err != nil {
		return err
	}
	if err := tlsprofile.ApplyConfigMap(ctx, core.CoreV1(), ac); err != nil {
		return err
	}
	if err := tlsprofile.AnnotateTarget(ctx, dyn, target, first.Hash); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(env.Dir, "reconciler.log"))
	if err != nil {
		return err
	}
	// The record names the profile, as kmshealth_reconciler's tls_profiles.
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-record"},
		Data: tlsprofile.RecordData([]tlsprofile.Kept{{Namespace: "default", Name: name, Targets: []tlsprofile.Target{target}}})}
	if _, err := core.CoreV1().ConfigMaps("default").Create(ctx, record, metav1.CreateOptions{}); err != nil {
		return err
	}
	p, err := devenv.StartReconcile(ctx, bin, logf, env.Token, "--kubeconfig="+env.Kubeconfig, "--namespace=default",
		"--record-configmap="+record.Name, "--leader-elect=false")
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	defer p.Stop()

	deployments := core.AppsV1().Deployments("default")
	w, err := deployments.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	lat := make(devenv.Latencies, 0, o.changes)
	types := []tlsprofile.ProfileType{tlsprofile.ProfileModern, tlsprofile.ProfileIntermediate}
	for i := range o.changes {
		typ := types[i%2]
		want, err := resolve(typ)
		if err != nil {
			return err
		}
		if err := testenv.SetClusterTLSProfile(ctx, dyn, map[string]any{"type": string(typ)}); err != nil {
			return err
		}
		start := time.Now()
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return fmt.Errorf("watch of Deployment %s closed", name)
				}
				if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Spec.Template.Annotations[tlsprofile.HashAnnotation] == want.Hash {
					lat = append(lat, time.Since(start))
					break wait
				}
			case <-timeout:
				return fmt.Errorf("profile change %d (%s) did not reach the target within 10s (log: %s)", i+1, typ, logf.Name())
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	_, _ = fmt.Fprintf(out, "cluster profile change → profile ConfigMap → rollout target's pod-template hash, %d changes (from the APIServer update's response to the watch event of the target with the new hash)\n", len(lat))
	_, _ = fmt.Fprintf(out, "    %s\n", lat.Summary())
	return nil
}
