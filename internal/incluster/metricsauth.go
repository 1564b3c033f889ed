package incluster

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/klog/v2"
)

// Decisions are cached per token, so a Prometheus scraping every few
// seconds costs two reviews a minute, not two per scrape; a denial is
// forgotten sooner, so a fixed binding takes effect quickly.
const (
	allowedTTL = time.Minute
	deniedTTL  = 10 * time.Second
	// maxCached bounds the cache: a handful of scrapers is the norm; past
	// it, the cache starts over (each caller then costs its reviews again).
	maxCached = 256
	// reviewTimeout bounds the two reviews of one request.
	reviewTimeout = 10 * time.Second
)

// reviewer lets through only callers whose bearer token passes a
// TokenReview and whose RBAC allows the request's verb on its
// non-resource URL (a SubjectAccessReview), as kube-rbac-proxy and
// controller-runtime's metrics filter do, with two plain JSON requests:
// no token is 401, a token the API server does not accept is 401, a caller
// RBAC does not allow is 403, and a review that cannot be made is 503.
type reviewer struct {
	api *JSONClient
	now func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]decision
}

// decision is a cached answer: the status code to send (200 lets through).
type decision struct {
	code    int
	expires time.Time
}

func newReviewer(api *JSONClient) *reviewer {
	return &reviewer{api: api, now: time.Now, cache: map[[32]byte]decision{}}
}

// wrap returns h behind the reviews.
func (rv *reviewer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		code := rv.decide(r.Context(), token, strings.ToLower(r.Method), r.URL.Path)
		if code != http.StatusOK {
			http.Error(w, http.StatusText(code), code)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bearerToken is the request's "Authorization: Bearer <token>".
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// decide returns the status code for token asking verb on path, from the
// cache or from the two reviews.
func (rv *reviewer) decide(ctx context.Context, token, verb, path string) int {
	key := sha256.Sum256([]byte(verb + " " + path + "\x00" + token))
	now := rv.now()
	rv.mu.Lock()
	d, ok := rv.cache[key]
	rv.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d.code
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	code, err := rv.review(ctx, token, verb, path)
	if err != nil {
		klog.ErrorS(err, "Metrics request not reviewed", "path", path)
		return http.StatusServiceUnavailable // not cached: the next request asks again
	}
	ttl := deniedTTL
	if code == http.StatusOK {
		ttl = allowedTTL
	}
	rv.mu.Lock()
	if len(rv.cache) >= maxCached {
		clear(rv.cache)
	}
	rv.cache[key] = decision{code: code, expires: now.Add(ttl)}
	rv.mu.Unlock()
	return code
}

// review asks the API server who token is (TokenReview) and whether that
// user may verb path (SubjectAccessReview).
func (rv *reviewer) review(ctx context.Context, token, verb, path string) (int, error) {
	var tr authenticationv1.TokenReview
	in := authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	in.APIVersion, in.Kind = authenticationv1.SchemeGroupVersion.String(), "TokenReview"
	if err := rv.api.Do(ctx, http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", &in, &tr); err != nil {
		return 0, err
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, nil
	}
	u := tr.Status.User
	sar := authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra(u.Extra),
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	sar.APIVersion, sar.Kind = authorizationv1.SchemeGroupVersion.String(), "SubjectAccessReview"
	var out authorizationv1.SubjectAccessReview
	if err := rv.api.Do(ctx, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", &sar, &out); err != nil {
		return 0, err
	}
	if !out.Status.Allowed || out.Status.Denied {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}

// extra converts a TokenReview's user extra into a SubjectAccessReview's.
func extra(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}
