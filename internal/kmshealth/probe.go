package kmshealth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	kmsapi "k8s.io/kms/apis/v2"
)

// MaxKEKIDBytes is the bound on StatusResponse.key_id the API server itself
// enforces; a longer key id makes the plugin unhealthy.
const MaxKEKIDBytes = 1024

// Result is one plugin's answer to Status, or the error that prevented it.
type Result struct {
	Socket  Socket
	Checked time.Time
	Latency time.Duration
	Version string
	Healthz string
	KEKID   string
	Err     error
}

// Probe calls Status on every socket at once, each call bounded by timeout,
// and returns the results in the order of sockets. It never fails as a
// whole: a plugin that cannot be reached is a Result with Err set.
func Probe(ctx context.Context, sockets []Socket, timeout time.Duration, now func() time.Time) []Result {
	out := make([]Result, len(sockets))
	var wg sync.WaitGroup
	for i, s := range sockets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = probeOne(ctx, s, timeout, now)
		}()
	}
	wg.Wait()
	return out
}

func probeOne(ctx context.Context, s Socket, timeout time.Duration, now func() time.Time) (r Result) {
	r.Socket = s
	start := time.Now()
	defer func() {
		r.Latency = time.Since(start)
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A fresh connection per probe: a restarted plugin is seen at once, not
	// after gRPC's reconnect back-off, and nothing lingers between ticks.
	conn, err := grpc.NewClient("unix://"+s.Path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		r.Checked, r.Err = now(), fmt.Errorf("connect: %w", err)
		return r
	}
	defer func() { _ = conn.Close() }()
	resp, err := kmsapi.NewKeyManagementServiceClient(conn).Status(ctx, &kmsapi.StatusRequest{}, grpc.WaitForReady(true))
	r.Checked = now()
	if err != nil {
		r.Err = fmt.Errorf("status RPC: %w", err)
		return r
	}
	r.Version, r.Healthz, r.KEKID = resp.GetVersion(), resp.GetHealthz(), resp.GetKeyId()
	return r
}

// Plugin turns a probe result into its wire-format entry: healthy when
// healthz is "ok", the version is v2 or v2beta1 and the key id is non-empty
// and under MaxKEKIDBytes; error when the RPC failed.
func (r Result) Plugin() Plugin {
	p := Plugin{KeyID: r.Socket.KeyID, LastChecked: r.Checked.UTC().Truncate(time.Second)}
	if r.Err != nil {
		p.Status = StatusError
		p.Detail = truncate(r.Err.Error(), MaxDetailBytes)
		return p
	}
	// A key id is kept whole while it is valid (under MaxKEKIDBytes), so two
	// ids that differ only at the end never look alike.
	p.KEKID = r.KEKID
	if len(p.KEKID) >= MaxKEKIDBytes {
		p.KEKID = truncate(p.KEKID, MaxDetailBytes)
	}
	var problems []string
	if r.Healthz != "ok" {
		problems = append(problems, fmt.Sprintf("healthz %q, want \"ok\"", truncate(r.Healthz, 128)))
	}
	if r.Version != "v2" && r.Version != "v2beta1" {
		problems = append(problems, fmt.Sprintf("version %q, want v2 or v2beta1", truncate(r.Version, 32)))
	}
	switch {
	case r.KEKID == "":
		problems = append(problems, "empty key_id")
	case len(r.KEKID) >= MaxKEKIDBytes:
		problems = append(problems, fmt.Sprintf("key_id is %d bytes, must be under %d", len(r.KEKID), MaxKEKIDBytes))
	}
	if len(problems) == 0 {
		p.Status = StatusHealthy
		return p
	}
	p.Status = StatusUnhealthy
	p.Detail = truncate(strings.Join(problems, "; "), MaxDetailBytes)
	return p
}
