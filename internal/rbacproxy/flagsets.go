package rbacproxy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Which flags a kube-rbac-proxy image takes depends on the release it is
// built from. The sidecar's arguments are checked against the flag set of
// that release at plan time, so an image that would refuse an argument (and
// crash-loop) is refused before anything is written.

// DefaultVersion is the release of DefaultImage.
const DefaultVersion = "v0.22.1"

// Version is a kube-rbac-proxy release, major.minor.patch.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare is -1, 0 or +1 as v is before, equal to or after w.
func (v Version) Compare(w Version) int {
	for _, d := range [][2]int{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// versionPattern is a release as tags and users write it: "v0.22.1",
// "0.22.1", "v0.22" (patch 0), with an optional suffix ("-amd64").
var versionPattern = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?$`)

// ParseVersion reads a release written like "v0.22.1"; ok is false for
// anything else.
func ParseVersion(s string) (Version, bool) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return Version{}, false
	}
	var v Version
	var err error
	if v.Major, err = strconv.Atoi(m[1]); err != nil {
		return Version{}, false
	}
	if v.Minor, err = strconv.Atoi(m[2]); err != nil {
		return Version{}, false
	}
	if m[3] != "" {
		if v.Patch, err = strconv.Atoi(m[3]); err != nil {
			return Version{}, false
		}
	}
	return v, true
}

// ImageTag is the tag of an image reference ("v0.22.1" of
// "quay.io/brancz/kube-rbac-proxy:v0.22.1@sha256:…"), or "" when it has
// none (a bare name, or a digest only).
func ImageTag(image string) string {
	name, _, _ := strings.Cut(image, "@")
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i:], "/") {
		return "" // no colon, or the colon of a registry's port
	}
	return name[i+1:]
}

// FlagSet is the command line one range of kube-rbac-proxy releases takes.
type FlagSet struct {
	// From is the first release of the range, Until the first after it.
	From, Until Version
	// Flags are the flag names (without "--") the releases take.
	Flags []string
	// GroupsFlag is the flag that takes the TLS key-exchange groups (as
	// Kubernetes components' --tls-curve-preferences does), or "" when the
	// releases have none: their listener then offers the groups the Go
	// release they were built with enables by default.
	GroupsFlag string
	// Source says where the flag set was read.
	Source string
}

// Range is "v0.19.0 to v0.22.x".
func (f FlagSet) Range() string {
	last := f.Until
	switch {
	case last.Patch > 0:
		last.Patch--
		return fmt.Sprintf("%s to %s", f.From, last)
	case last.Minor > 0:
		return fmt.Sprintf("%s to v%d.%d.x", f.From, last.Major, last.Minor-1)
	}
	return fmt.Sprintf("%s to v%d.x", f.From, last.Major-1)
}

// Takes reports whether the releases take --name.
func (f FlagSet) Takes(name string) bool { return slices.Contains(f.Flags, name) }

// FlagSets are the flag sets kmshealth knows, oldest first. A release
// outside every range is refused: its flags are not known, and a flag it
// does not take makes the proxy exit at startup.
//
// Read from cmd/kube-rbac-proxy/app/options/options.go and the global
// flags its command adds (k8s.io/component-base verflag and globalflag) at
// the tags v0.19.0, v0.19.1, v0.20.0, v0.20.1, v0.20.2, v0.21.0 and
// v0.22.1: every one of them registers exactly these flags. The releases
// still take --insecure-listen-address, --secure-listen-address,
// --auth-header-fields-enabled, --tls-reload-interval and --kubeconfig
// (the first and the fourth marked deprecated in their help text only);
// what drops or renames them is kube-rbac-proxy's unreleased
// sig-auth-acceptance branch (k8s.io/apiserver's secure-serving and
// delegating authn/authz options: --bind-address, --secure-port,
// --authentication-kubeconfig, ...), which no tag carries yet: a release
// of it becomes a new entry here. None of the releases has a flag for the
// key-exchange groups.
func FlagSets() []FlagSet {
	return []FlagSet{{
		From:  Version{0, 19, 0},
		Until: Version{0, 23, 0},
		Flags: []string{
			// proxy
			"insecure-listen-address", "secure-listen-address", "upstream", "upstream-force-h2c", "upstream-ca-file",
			"config-file", "allow-paths", "ignore-paths", "proxy-endpoints-port",
			// TLS
			"tls-cert-file", "tls-private-key-file", "tls-min-version", "tls-cipher-suites", "tls-reload-interval",
			"upstream-client-cert-file", "upstream-client-key-file",
			// authentication
			"client-ca-file", "auth-header-fields-enabled", "auth-header-user-field-name", "auth-header-groups-field-name",
			"auth-header-groups-field-separator", "auth-token-audiences",
			"oidc-issuer", "oidc-clientID", "oidc-groups-claim", "oidc-username-claim", "oidc-username-prefix",
			"oidc-groups-prefix", "oidc-sign-alg", "oidc-ca-file",
			// API server client
			"kubeconfig", "kube-api-qps", "kube-api-burst",
			// HTTP/2
			"http2-disable", "http2-max-concurrent-streams", "http2-max-size",
			// global: klog's verbosity, help, version
			"v", "vmodule", "help", "version",
		},
		Source: "kube-rbac-proxy v0.19.0 to v0.22.1, cmd/kube-rbac-proxy/app/options",
	}}
}

// FlagSetFor is the flag set of release v; ok is false when kmshealth
// knows none.
func FlagSetFor(v Version) (FlagSet, bool) {
	for _, f := range FlagSets() {
		if v.Compare(f.From) >= 0 && v.Compare(f.Until) < 0 {
			return f, true
		}
	}
	return FlagSet{}, false
}

// knownRanges lists the ranges of FlagSets for messages.
func knownRanges() string {
	var out []string
	for _, f := range FlagSets() {
		out = append(out, f.Range())
	}
	return strings.Join(out, ", ")
}

// release is the kube-rbac-proxy release c's sidecar runs and where that
// was read: ProxyVersion when set, else the image's tag. stated is false
// when neither names a release; DefaultVersion is then assumed.
func (c Config) release() (v Version, from string, stated bool) {
	if c.ProxyVersion != "" {
		v, ok := ParseVersion(c.ProxyVersion)
		return v, "proxyVersion", ok
	}
	if v, ok := ParseVersion(ImageTag(c.Image)); ok {
		return v, "image", true
	}
	v, _ = ParseVersion(DefaultVersion)
	return v, "", false
}

func (c Config) validateRelease(es *fieldErrors) {
	if c.ProxyVersion != "" {
		if _, ok := ParseVersion(c.ProxyVersion); !ok {
			es.add(fieldPath("proxyVersion"), "%q is not a kube-rbac-proxy release: write the release the image is built from, like %s", c.ProxyVersion, DefaultVersion)
			return
		}
	}
	release, from, _ := c.release()
	fs, ok := FlagSetFor(release)
	if !ok {
		switch from {
		case "proxyVersion":
			es.add(fieldPath("proxyVersion"), "kmshealth does not know the flags of kube-rbac-proxy %s; it knows %s: use an image of such a release (the default is %s)", release, knownRanges(), DefaultImage)
		default:
			es.add(fieldPath("image"), "%q is kube-rbac-proxy %s by its tag, whose flags kmshealth does not know; it knows %s: use an image of such a release (the default is %s), or, if this image is built from one of them under another tag, set proxyVersion to that release", c.Image, release, knownRanges(), DefaultImage)
		}
		return
	}
	c.checkArgs(es, fs, release)
}

// checkArgs reports each argument of c that the flag set of release does
// not take, at the field it comes from.
func (c Config) checkArgs(es *fieldErrors, fs FlagSet, release Version) {
	for _, a := range c.args() {
		if !fs.Takes(a.flag) {
			es.add(fieldPath(a.field), "needs --%s, which kube-rbac-proxy %s does not take (flags of %s): change this setting, or use an image of a release that takes the flag", a.flag, release, fs.Range())
		}
	}
}

// releaseWarnings: an image that names no release.
func (c Config) releaseWarnings(ws *fieldErrors) {
	if _, _, stated := c.release(); !stated && c.ProxyVersion == "" {
		ws.add(fieldPath("image"), "%q names no kube-rbac-proxy release in its tag, so kmshealth assumes it takes the flags of %s (the default image's): set proxyVersion to the release the image is built from, and its arguments are checked against that release's flags", c.Image, DefaultVersion)
	}
}
