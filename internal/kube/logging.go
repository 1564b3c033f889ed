package kube

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Redacted replaces a credential in logged headers and URLs.
const Redacted = "<redacted>"

// LogFunc writes one log entry: a message and its fields.
type LogFunc func(ctx context.Context, msg string, fields map[string]any)

// LogRequests returns a transport wrapper (for rest.Config.Wrap) that hands
// log every request line with its headers, then the response status with
// its headers, or the transport error, each with the request's context.
// Credentials are redacted (Authorization, Proxy-Authorization, cookies,
// any Bearer or Basic value, URL passwords and token query parameters), and
// no body is ever logged: request and response bodies may hold Secret data.
// Wrapped innermost by client-go, it sees the headers the authentication
// wrappers have already set.
func LogRequests(log LogFunc) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &loggingTransport{next: rt, log: log}
	}
}

type loggingTransport struct {
	next http.RoundTripper
	log  LogFunc
	seq  atomic.Uint64 // pairs a response with its request
}

func (t *loggingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id := t.seq.Add(1)
	ctx := req.Context()
	t.log(ctx, "Kubernetes API request", map[string]any{
		"request_id": id,
		"method":     req.Method,
		"url":        redactedRequestURL(req.URL),
		"headers":    redactHeaders(req.Header),
	})
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	took := time.Since(start).Milliseconds()
	if err != nil {
		t.log(ctx, "Kubernetes API request failed", map[string]any{"request_id": id, "error": err.Error(), "duration_ms": took})
		return resp, err
	}
	t.log(ctx, "Kubernetes API response", map[string]any{
		"request_id":  id,
		"status":      resp.Status,
		"status_code": resp.StatusCode,
		"protocol":    resp.Proto,
		"headers":     redactHeaders(resp.Header),
		"duration_ms": took,
	})
	return resp, nil
}

// secretHeader reports whether a header carries credentials whatever its
// value looks like.
func secretHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Auth-Token", "X-Api-Key":
		return true
	}
	return false
}

// redactHeaders returns h as name → value (several values joined by ", "),
// with credentials replaced by Redacted. A credential keeps its scheme
// ("Bearer <redacted>"), so the log still shows which kind was sent.
func redactHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for name, values := range h {
		redacted := make([]string, len(values))
		for i, v := range values {
			redacted[i] = redactValue(secretHeader(name), v)
		}
		out[name] = strings.Join(redacted, ", ")
	}
	return out
}

// redactValue redacts v when it is a credential: any value of a secret
// header, and a Bearer or Basic credential in any header.
func redactValue(secret bool, v string) string {
	scheme, _, hasScheme := strings.Cut(strings.TrimSpace(v), " ")
	isScheme := hasScheme && authScheme(scheme)
	lower := strings.ToLower(scheme)
	switch {
	case isScheme && (secret || lower == "bearer" || lower == "basic"):
		return scheme + " " + Redacted
	case secret:
		return Redacted
	}
	return v
}

// authScheme reports whether s looks like an HTTP authentication scheme
// (a token such as Bearer or Negotiate), not a piece of a cookie.
func authScheme(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return s != ""
}

// redactedRequestURL is u without a password and without the values of
// query parameters that look like credentials.
func redactedRequestURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if q := c.Query(); len(q) > 0 {
		changed := false
		for k := range q {
			if lk := strings.ToLower(k); strings.Contains(lk, "token") || strings.Contains(lk, "password") || strings.Contains(lk, "secret") {
				q[k], changed = []string{Redacted}, true
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.Redacted()
}
