package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// logEntry is one call of a LogFunc.
type logEntry struct {
	msg    string
	fields map[string]any
}

// recorder collects log entries and the context values they were given.
type recorder struct {
	mu      sync.Mutex
	entries []logEntry
	marks   []any
}

type markKey struct{}

func (r *recorder) log(ctx context.Context, msg string, fields map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, logEntry{msg, fields})
	r.marks = append(r.marks, ctx.Value(markKey{}))
}

func (r *recorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%+v", r.entries)
}

// TestLogRequests sends real client-go requests through the wrapper, as
// the provider does (rest.Config.Wrap), and checks what reaches the log.
func TestLogRequests(t *testing.T) {
	const (
		token       = "the-bearer-token-1234"
		secretValue = "c3VwZXItc2VjcmV0"
		cookie      = "session=cookie-secret"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", cookie)
		_, _ = fmt.Fprintf(w, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"},"data":{"password":%q}}`, secretValue)
	}))
	defer srv.Close()

	tests := []struct {
		name      string
		cfg       rest.Config
		secrets   []string // must not appear anywhere in the log
		wantAuthz string
	}{
		{name: "bearer token", cfg: rest.Config{BearerToken: token}, secrets: []string{token}, wantAuthz: "Bearer " + Redacted},
		{name: "basic auth", cfg: rest.Config{Username: "bob", Password: "hunter2"}, secrets: []string{"hunter2", "Ym9iOmh1bnRlcjI="}, wantAuthz: "Basic " + Redacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			cfg := tt.cfg
			cfg.Host = srv.URL
			cfg.Wrap(LogRequests(rec.log))
			cs, err := kubernetes.NewForConfig(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.WithValue(context.Background(), markKey{}, "the request's context")
			secret, err := cs.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get Secret: %v", err)
			}
			if string(secret.Data["password"]) != "super-secret" {
				t.Fatalf("Secret data = %q, the wrapper must not change the response", secret.Data["password"])
			}
			if len(rec.entries) != 2 {
				t.Fatalf("got %d log entries, want a request and a response: %s", len(rec.entries), rec.dump())
			}
			req, resp := rec.entries[0], rec.entries[1]
			if req.msg != "Kubernetes API request" || req.fields["method"] != "GET" ||
				req.fields["url"] != srv.URL+"/api/v1/namespaces/ns/secrets/s" {
				t.Errorf("request entry = %+v, want the request line", req)
			}
			if got := req.fields["headers"].(map[string]string)["Authorization"]; got != tt.wantAuthz {
				t.Errorf("logged Authorization = %q, want %q", got, tt.wantAuthz)
			}
			if resp.msg != "Kubernetes API response" || resp.fields["status"] != "200 OK" || resp.fields["request_id"] != req.fields["request_id"] {
				t.Errorf("response entry = %+v, want 200 OK with the request's id", resp)
			}
			if got := resp.fields["headers"].(map[string]string)["Set-Cookie"]; got != Redacted {
				t.Errorf("logged Set-Cookie = %q, want %q", got, Redacted)
			}
			dump := rec.dump()
			for _, s := range append(tt.secrets, secretValue, "super-secret", "cookie-secret") {
				if strings.Contains(dump, s) {
					t.Errorf("log contains %q:\n%s", s, dump)
				}
			}
			for i, m := range rec.marks {
				if m != "the request's context" {
					t.Errorf("entry %d logged with context value %v, want the request's context", i, m)
				}
			}
		})
	}
}

func TestLogRequestsTransportError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	var rec recorder
	cfg := &rest.Config{Host: "http://" + addr, BearerToken: "tok-987"}
	cfg.Wrap(LogRequests(rec.log))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err == nil {
		t.Fatal("get from a closed port succeeded")
	}
	dump := rec.dump()
	if !strings.Contains(dump, "Kubernetes API request failed") || !strings.Contains(dump, "connection refused") {
		t.Errorf("log = %s, want a failed-request entry with the error", dump)
	}
	if strings.Contains(dump, "tok-987") {
		t.Errorf("log contains the token: %s", dump)
	}
}

func TestRedaction(t *testing.T) {
	headers := http.Header{
		"Authorization":       {"Bearer abc.def.ghi"},
		"Proxy-Authorization": {"Basic dXNlcjpwYXNz"},
		"Cookie":              {"a=1; b=2"},
		"X-Custom":            {"bearer sneaky"},
		"X-Api-Key":           {"k-123"},
		"Accept":              {"application/json", "application/vnd.kubernetes.protobuf"},
		"Impersonate-User":    {"alice"},
	}
	want := map[string]string{
		"Authorization":       "Bearer " + Redacted,
		"Proxy-Authorization": "Basic " + Redacted,
		"Cookie":              Redacted,
		"X-Custom":            "bearer " + Redacted,
		"X-Api-Key":           Redacted,
		"Accept":              "application/json, application/vnd.kubernetes.protobuf",
		"Impersonate-User":    "alice",
	}
	got := redactHeaders(headers)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("redactHeaders()[%q] = %q, want %q", k, got[k], v)
		}
	}

	urls := map[string]string{
		"https://h/api/v1/pods?watch=true&resourceVersion=5": "https://h/api/v1/pods?watch=true&resourceVersion=5",
		"https://u:pw@h/api":                      "https://u:xxxxx@h/api",
		"https://h/api?access_token=t1&limit=500": "https://h/api?access_token=" + url.QueryEscape(Redacted) + "&limit=500",
	}
	for in, w := range urls {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := redactedRequestURL(u); got != w {
			t.Errorf("redactedRequestURL(%s) = %s, want %s", in, got, w)
		}
	}
}
