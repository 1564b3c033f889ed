package incluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// JSONClient sends JSON requests to the API server with a REST
// configuration's credentials and transport (its wrappers included), and
// nothing else: no client-go scheme, so a mode that makes a handful of
// requests (the reporter's reviews and its one discovery GET) does not link
// and initialise the scheme of every built-in API group.
type JSONClient struct {
	base *url.URL
	http *http.Client
}

// maxResponse bounds what one response may hold: reviews and one
// group/version's resource list are a few KiB.
const maxResponse = 4 << 20

// NewJSONClient returns a client for cfg's API server.
func NewJSONClient(cfg *rest.Config) (*JSONClient, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.GroupVersion == nil {
		cfg.GroupVersion = &metav1.SchemeGroupVersion // DefaultServerUrlFor wants one; the paths here are absolute
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", cfg.Host, err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server client: %w", err)
	}
	return &JSONClient{base: base, http: hc}, nil
}

// Do sends in (when not nil) as JSON to path (absolute, e.g.
// /apis/authentication.k8s.io/v1/tokenreviews) and decodes the answer into
// out. An answer that is not 2xx is an error apierrors understands
// (apierrors.IsNotFound and the like).
func (c *JSONClient) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var st metav1.Status
		if json.Unmarshal(b, &st) == nil && st.Kind == "Status" {
			return fmt.Errorf("%s %s: %w", method, path, apierrors.FromObject(&st))
		}
		return fmt.Errorf("%s %s: %w", method, path, apierrors.NewGenericServerResponse(resp.StatusCode, method, schema.GroupResource{}, "", strings.TrimSpace(string(b)), 0, false))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// ServerResources lists the resources of one group/version ("v1" is the
// core group) with one GET.
func (c *JSONClient) ServerResources(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error) {
	path := "/apis/" + groupVersion
	if groupVersion == "v1" {
		path = "/api/v1"
	}
	var list metav1.APIResourceList
	if err := c.Do(ctx, http.MethodGet, path, nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}
