package rbacproxy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v0.22.1": "v0.22.1", "0.19.1": "v0.19.1", "v0.20": "v0.20.0", "v0.22.1-amd64": "v0.22.1", "v4.16.0": "v4.16.0",
		"latest": "", "": "", "v0": "", "sha256:abc": "", "v0.x.1": "", "v0.22.1 ": "",
	} {
		v, ok := ParseVersion(in)
		if got := map[bool]string{true: v.String(), false: ""}[ok]; got != want {
			t.Errorf("ParseVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestImageTag(t *testing.T) {
	for in, want := range map[string]string{
		"quay.io/brancz/kube-rbac-proxy:v0.22.1":                 "v0.22.1",
		"quay.io/brancz/kube-rbac-proxy:v0.22.1@sha256:0123abcd": "v0.22.1",
		"quay.io/brancz/kube-rbac-proxy@sha256:0123abcd":         "",
		"quay.io/brancz/kube-rbac-proxy":                         "",
		"localhost:5000/kube-rbac-proxy":                         "",
		"localhost:5000/kube-rbac-proxy:v0.19.1":                 "v0.19.1",
		"kube-rbac-proxy:latest":                                 "latest",
	} {
		if got := ImageTag(in); got != want {
			t.Errorf("ImageTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFlagSetFor(t *testing.T) {
	for v, want := range map[Version]bool{
		{0, 19, 0}: true, {0, 19, 1}: true, {0, 20, 2}: true, {0, 22, 1}: true, {0, 22, 9}: true,
		{0, 18, 2}: false, {0, 23, 0}: false, {1, 0, 0}: false, {4, 16, 0}: false,
	} {
		if _, ok := FlagSetFor(v); ok != want {
			t.Errorf("FlagSetFor(%s) known = %t, want %t", v, ok, want)
		}
	}
	if v, _ := ParseVersion(DefaultVersion); !strings.HasSuffix(DefaultImage, ":"+DefaultVersion) {
		t.Errorf("DefaultImage %q is not of DefaultVersion %s", DefaultImage, v)
	}
	if fs, _ := FlagSetFor(Version{0, 22, 1}); fs.Range() != "v0.19.0 to v0.22.x" || fs.GroupsFlag != "" {
		t.Errorf("v0.22.1's flag set: range %q, groups flag %q; want v0.19.0 to v0.22.x and none", fs.Range(), fs.GroupsFlag)
	}
}

// TestValidateRelease: the release is read from proxyVersion, else the
// image's tag; a release whose flags kmshealth does not know is refused at
// the attribute that named it, with the fix; an image that names none is
// assumed to be DefaultVersion, with a warning. v0.19.1 and v0.22.1 take
// the same flags, plain HTTP included.
func TestValidateRelease(t *testing.T) {
	for _, tc := range []struct {
		name         string
		image, proxy string
		insecure     bool
		errField     string   // "" for valid
		errParts     []string // in the error's message
		warnImage    bool     // a warning at image
	}{
		{name: "default image", image: ""},
		{name: "v0.22.1", image: "quay.io/brancz/kube-rbac-proxy:v0.22.1"},
		{name: "v0.22.1 plain HTTP", image: "quay.io/brancz/kube-rbac-proxy:v0.22.1", insecure: true},
		{name: "v0.19.1 plain HTTP", image: "quay.io/brancz/kube-rbac-proxy:v0.19.1", insecure: true},
		{name: "tag and digest", image: "quay.io/brancz/kube-rbac-proxy:v0.19.1@sha256:0123456789abcdef"},
		{name: "digest only", image: "mirror.example.com/kube-rbac-proxy@sha256:0123456789abcdef", warnImage: true},
		{name: "digest only, release stated", image: "mirror.example.com/kube-rbac-proxy@sha256:0123456789abcdef", proxy: "v0.19.1"},
		{name: "a mirror's own tag, release stated", image: "registry.example.com/ose-kube-rbac-proxy:v4.16", proxy: "v0.22.1"},
		{name: "a mirror's own tag", image: "registry.example.com/ose-kube-rbac-proxy:v4.16",
			errField: "image", errParts: []string{"v4.16.0", "v0.19.0 to v0.22.x", "proxyVersion"}},
		{name: "older release", image: "quay.io/brancz/kube-rbac-proxy:v0.18.2",
			errField: "image", errParts: []string{"kube-rbac-proxy v0.18.2", "does not know", DefaultImage}},
		{name: "newer release", image: "quay.io/brancz/kube-rbac-proxy:v0.23.0",
			errField: "image", errParts: []string{"kube-rbac-proxy v0.23.0", "v0.19.0 to v0.22.x"}},
		{name: "stated release unknown", image: "quay.io/brancz/kube-rbac-proxy:v0.22.1", proxy: "v1.0.0",
			errField: "proxyVersion", errParts: []string{"kube-rbac-proxy v1.0.0", "v0.19.0 to v0.22.x"}},
		{name: "stated release malformed", proxy: "latest",
			errField: "proxyVersion", errParts: []string{`"latest" is not a kube-rbac-proxy release`, DefaultVersion}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			c.Image, c.ProxyVersion, c.InsecureListen = tc.image, tc.proxy, tc.insecure
			es := problems(t, c.Validate())
			switch {
			case tc.errField == "" && len(es) > 0:
				t.Errorf("refused: %v", es)
			case tc.errField != "" && !has(es, tc.errField, tc.errParts...):
				t.Errorf("got %v, want an error at %s saying %q", es, tc.errField, tc.errParts)
			}
			warned := has(c.Warnings(), "image", "names no kube-rbac-proxy release", "proxyVersion")
			if warned != tc.warnImage {
				t.Errorf("warning at image: %t, want %t (%v)", warned, tc.warnImage, c.Warnings())
			}
		})
	}
}

// TestFlagSetsMatchTheBinaries holds FlagSets to the real releases: every
// flag `kube-rbac-proxy --help` lists is in the flag set of its release and
// every flag of the set is known to the binary, every argument the sidecar
// can be given parses, and a flag for
// the key-exchange groups (Kubernetes components' --tls-curve-preferences)
// is refused as unknown, as GroupsFlag "" says. The binaries are the
// default image's release ($KMSHEALTH_KUBE_RBAC_PROXY, tools/install.sh
// kube-rbac-proxy) and v0.19.1 ($KMSHEALTH_KUBE_RBAC_PROXY_V019,
// tools/install.sh kube-rbac-proxy-v0.19), the two ends of the range.
func TestFlagSetsMatchTheBinaries(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([A-Za-z0-9-]+)`)
	for _, tc := range []struct{ env, tool string }{
		{"KMSHEALTH_KUBE_RBAC_PROXY", "kube-rbac-proxy"},
		{"KMSHEALTH_KUBE_RBAC_PROXY_V019", "kube-rbac-proxy-v0.19"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			bin := os.Getenv(tc.env)
			if bin == "" {
				t.Fatalf("%s is not set: export %[1]s=$(bash tools/install.sh %s) (make integration does)", tc.env, tc.tool)
			}
			out, err := exec.Command(bin, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", bin, err, out)
			}
			release, ok := ParseVersion(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "kube-rbac-proxy")))
			if !ok {
				t.Fatalf("%s --version says %q, not a release", bin, out)
			}
			fs, ok := FlagSetFor(release)
			if !ok {
				t.Fatalf("no flag set for %s, the release of %s", release, bin)
			}
			help, err := exec.Command(bin, "--help").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --help: %v\n%s", bin, err, help)
			}
			// Every flag --help lists is in the table (klog's --v and
			// --vmodule are taken but not listed), and every flag of the
			// table is known to the binary: a value of the wrong type is
			// "invalid argument", an unknown flag "unknown flag".
			for _, m := range flagLine.FindAllStringSubmatch(string(help), -1) {
				if !fs.Takes(m[1]) {
					t.Errorf("kube-rbac-proxy %s lists --%s, which its flag set (%s) lacks", release, m[1], fs.Range())
				}
			}
			for _, name := range fs.Flags {
				out, _ := exec.Command(bin, "--"+name+"=x", "--help").CombinedOutput()
				if strings.Contains(string(out), "unknown flag") {
					t.Errorf("kube-rbac-proxy %s does not take --%s, which its flag set (%s) lists: %s", release, name, fs.Range(), tail(out))
				}
			}
			// Every argument the sidecar can pass parses (--help after them:
			// the flags are parsed, nothing is started).
			full := valid()
			full.TLS = TLS{SecretName: "web-tls", MinVersion: "VersionTLS12", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}
			full.IgnorePaths = []string{"/healthz", "/public/*"}
			insecure := valid()
			insecure.InsecureListen, insecure.AllowPaths = true, []string{"/metrics"}
			for _, c := range []Config{full, insecure} {
				args := append(c.Args(), "--help")
				if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
					t.Errorf("kube-rbac-proxy %s refuses %q: %v\n%s", release, args, err, tail(out))
				}
			}
			out, err = exec.Command(bin, "--tls-curve-preferences=X25519MLKEM768,X25519", "--help").CombinedOutput()
			if err == nil || !strings.Contains(string(out), "unknown flag: --tls-curve-preferences") {
				t.Errorf("kube-rbac-proxy %s took --tls-curve-preferences (%v, %s): FlagSets says it has no groups flag", release, err, tail(out))
			}
		})
	}
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}
