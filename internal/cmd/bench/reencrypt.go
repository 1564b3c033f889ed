package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const reencryptUsage = "reencrypt [-secrets=10000] [-concurrency=8] [-page=500]"

type reencryptOptions struct{ secrets, concurrency, page int }

func parseReencryptFlags(args []string) (reencryptOptions, error) {
	var o reencryptOptions
	fs := flag.NewFlagSet("reencrypt", flag.ContinueOnError)
	fs.IntVar(&o.secrets, "secrets", 10000, "Secrets to write under key 1 and re-encrypt under key 2")
	fs.IntVar(&o.concurrency, "concurrency", reencrypt.DefaultConcurrency, "updates in flight (the resource's concurrency)")
	fs.IntVar(&o.page, "page", reencrypt.DefaultPageSize, "LIST page size")
	if err := parseFlags(fs, args, reencryptUsage); err != nil {
		return o, err
	}
	return o, atLeast1(intFlag{"secrets", o.secrets}, intFlag{"concurrency", o.concurrency}, intFlag{"page", o.page})
}

// run measures the rewrite path of kmshealth_kms_reencryption on the real
// test control plane: -secrets Secrets written under KMS key 1, the
// plugin rotated to key 2 and kube-apiserver writing under it, then one
// run under key 2 (every object re-encrypted) and a second run with a new
// record (every object already under key 2: the API server skips the
// storage write). For each: objects/s, the API requests per object (from
// kube-apiserver's apiserver_request_total), and etcd writes (revisions).
func (o reencryptOptions) run(ctx context.Context, out io.Writer) error {
	env, err := testenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Stop()
	unthrottled := rest.CopyConfig(env.RESTConfig())
	unthrottled.QPS, unthrottled.Burst = -1, 0 // the provider's clients are not throttled either
	core := kubernetes.NewForConfigOrDie(unthrottled)
	version, _ := core.Discovery().ServerVersion()
	_, _ = fmt.Fprintf(out, "Re-encryption benchmark: kube-apiserver %s, %d CPUs, %s, %s\n", version, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))
	_, _ = fmt.Fprintf(out, "%d Secrets, concurrency %d, page %d, rewrite path\n\n", o.secrets, o.concurrency, o.page)

	const ns = "bench-reencrypt"
	if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	start := time.Now()
	if err := writeSecrets(ctx, core, ns, o.secrets); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "wrote %d Secrets under key 1 in %s\n", o.secrets, time.Since(start).Round(time.Millisecond))
	env.KMS.SetKeyID("2")
	start = time.Now()
	if err := env.WaitKeyInUse(ctx, "2"); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "kube-apiserver took key 2 after %s\n\n", time.Since(start).Round(time.Millisecond))

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{env.EtcdEndpoint}, DialTimeout: 5 * time.Second, Context: ctx})
	if err != nil {
		return err
	}
	defer func() { _ = etcd.Close() }()
	revision := func() (int64, error) {
		r, err := etcd.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		return r.Header.Revision, nil
	}
	gate := func(context.Context) (reencrypt.Health, error) {
		return reencrypt.Health{Target: "bench", RotationReady: true, KEKIDs: map[string]string{"1": env.KMS.KeyID()}}, nil
	}
	_, _ = fmt.Fprintf(out, "%-28s %8s %10s %12s %12s  %s\n", "run", "objects", "seconds", "objects/s", "etcd writes", "API requests per object")
	for _, name := range []string{"rotated", "already-fresh"} {
		cfg := rest.CopyConfig(unthrottled)
		before, err := scrapeRequests(ctx, core)
		if err != nil {
			return err
		}
		rev0, err := revision()
		if err != nil {
			return err
		}
		t0 := time.Now()
		rec, err := reencrypt.Run(ctx, cfg, reencrypt.Options{
			Namespace: ns, Name: name, KeyID: "2", Method: reencrypt.MethodRewrite,
			Concurrency: o.concurrency, PageSize: int64(o.page), Gate: gate,
		})
		if err != nil {
			return err
		}
		took := time.Since(t0)
		rev1, err := revision()
		if err != nil {
			return err
		}
		after, err := scrapeRequests(ctx, core)
		if err != nil {
			return err
		}
		n := rec.Progress[0].Done
		reqs := after.sub(before)
		perObject := map[string]float64{}
		for k, v := range reqs {
			perObject[k.verb+" "+k.resource] += v
		}
		_, _ = fmt.Fprintf(out, "%-28s %8d %10.2f %12.0f %12d  PUT secrets=%.3f LIST secrets=%.4f, all=%.3f\n",
			name, n, took.Seconds(), float64(n)/took.Seconds(), rev1-rev0,
			perObject["PUT secrets"]/float64(n), perObject["LIST secrets"]/float64(n), totalRequests(reqs)/float64(n))
	}
	stored, err := env.StoredKeyIDs(ctx, "secrets/"+ns+"/")
	if err != nil {
		return err
	}
	under2 := 0
	for _, id := range stored {
		if id == "2" {
			under2++
		}
	}
	_, _ = fmt.Fprintf(out, "\netcd: %d of %d Secrets of %s stored under key 2\n", under2, len(stored), ns)
	if under2 != len(stored) {
		return fmt.Errorf("%d Secrets not under key 2 after the run", len(stored)-under2)
	}
	return nil
}

// writeSecrets creates n small Secrets in ns, 16 at a time.
func writeSecrets(ctx context.Context, core kubernetes.Interface, ns string, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%06d", i)}, Data: map[string][]byte{"v": []byte("bench value")}}
				if _, err := core.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create Secret %s/%s: %w", ns, s.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// scrapeRequests reads kube-apiserver's request counters.
func scrapeRequests(ctx context.Context, core kubernetes.Interface) (requestCounts, error) {
	body, err := core.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape kube-apiserver /metrics: %w", err)
	}
	samples, err := devenv.ParseSamples(body)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	return countRequests(samples, "apiserver_request_total"), nil
}

func totalRequests(c requestCounts) float64 {
	var t float64
	for _, v := range c {
		t += v
	}
	return t
}
