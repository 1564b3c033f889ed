package tlsprofile

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/ciphers"
)

// Names shared by the Terraform resource, the reconciler and consumers.
const (
	// DocumentKey is the ConfigMap key (and mounted file name) of the
	// resolved document.
	DocumentKey = "profile.json"
	// HashAnnotation goes on a rollout target's pod template; its value is
	// [Resolved.Hash], so a profile change rolls the workload.
	HashAnnotation = "kmshealth.io/tls-profile-hash"
	// LibraryDefaults is what curvePreferences says when the profile names
	// no groups: the consuming TLS library's own defaults apply.
	LibraryDefaults = "library-defaults"
)

// Document is profile.json. The field order is part of the format: the hash
// is taken over the exact bytes, so it changes only when the profile does.
type Document struct {
	// Type is the profile type.
	Type ProfileType `json:"type"`
	// MinTLSVersion is the minimum version that applies (VersionTLS10 …).
	MinTLSVersion TLSVersion `json:"minTLSVersion"`
	// Ciphers are the cipher names as given (OpenSSL or IANA, TLS 1.3
	// suites included), for consumers with other TLS libraries; with FIPS,
	// without the ones FIPS does not approve.
	Ciphers []string `json:"ciphers"`
	// CipherSuites are the IANA names of the TLS 1.0–1.2 suites Go will be
	// configured with; empty when MinTLSVersion is VersionTLS13.
	CipherSuites []string `json:"cipherSuites"`
	// Groups are the key-exchange group names as given, in the profile's
	// order (a preference order for libraries that honour one); empty when
	// none were named; with FIPS, without the ones FIPS does not approve.
	Groups []string `json:"groups"`
	// CurvePreferences are the groups Go will be configured with
	// (tls.Config.CurvePreferences), in Go's own preference order;
	// written as the string "library-defaults" when empty.
	CurvePreferences CurvePreferences `json:"curvePreferences"`
	// ComponentArgs are the same settings as Kubernetes components' flags
	// (k8s.io/apiserver SecureServingOptions): --tls-min-version,
	// --tls-cipher-suites (left out when empty) and --tls-curve-preferences
	// (numeric Go curve IDs; left out for the library defaults).
	ComponentArgs []string `json:"componentArgs"`
	// FIPS says the profile keeps only what FIPS approves.
	FIPS bool `json:"fips,omitempty"`
	// FIPSDropped are the ciphers and groups the profile named and FIPS
	// does not approve.
	FIPSDropped []string `json:"fipsDropped,omitempty"`
	// TLSAdherence is the cluster's tlsAdherence the profile was resolved
	// under (absent: no opinion), so that the hash follows it.
	TLSAdherence Adherence `json:"tlsAdherence,omitempty"`
	// Source is "static" or "cluster".
	Source Source `json:"source"`
}

// The flags of Kubernetes components' secure serving (k8s.io/apiserver
// SecureServingOptions; --tls-curve-preferences since Kubernetes 1.36).
const (
	FlagTLSMinVersion       = "--tls-min-version"
	FlagTLSCipherSuites     = "--tls-cipher-suites"
	FlagTLSCurvePreferences = "--tls-curve-preferences"
)

// componentArgsFor derives the component flags from the resolved fields:
// the version by the name k8s.io/component-base's TLSVersion takes, the
// suites by the IANA names its TLSCipherSuites takes, the groups as numeric
// curve IDs as --tls-curve-preferences takes them.
func (d Document) componentArgsFor() ([]string, error) {
	args := []string{FlagTLSMinVersion + "=" + string(d.MinTLSVersion)}
	if len(d.CipherSuites) > 0 {
		args = append(args, FlagTLSCipherSuites+"="+strings.Join(d.CipherSuites, ","))
	}
	if len(d.CurvePreferences) > 0 {
		ids := make([]tls.CurveID, 0, len(d.CurvePreferences))
		for i, name := range d.CurvePreferences {
			id, err := ParseGroup(name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", DocumentKey, at(fmt.Sprintf("curvePreferences[%d]", i), err))
			}
			ids = append(ids, id)
		}
		args = append(args, FlagTLSCurvePreferences+"="+curveIDList(ids))
	}
	return args, nil
}

// CurvePreferences lists group names. Empty means the TLS library's
// defaults, and is written as the JSON string [LibraryDefaults] rather than
// an empty list, so the document never leaves it implicit.
type CurvePreferences []string

// UsesLibraryDefaults reports whether no groups were named.
func (c CurvePreferences) UsesLibraryDefaults() bool { return len(c) == 0 }

// MarshalJSON writes the list, or "library-defaults" when it is empty.
func (c CurvePreferences) MarshalJSON() ([]byte, error) {
	if len(c) == 0 {
		return json.Marshal(LibraryDefaults)
	}
	return json.Marshal([]string(c))
}

// UnmarshalJSON reads a non-empty list of names or "library-defaults".
func (c *CurvePreferences) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return fmt.Errorf("curvePreferences is null; it must be %q or a list of group names", LibraryDefaults)
	}
	if bytes.HasPrefix(b, []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s != LibraryDefaults {
			return fmt.Errorf("curvePreferences is the string %q; it must be %q or a list of group names", s, LibraryDefaults)
		}
		*c = nil
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return fmt.Errorf("curvePreferences must be %q or a list of group names: %w", LibraryDefaults, err)
	}
	if len(names) == 0 {
		return fmt.Errorf("curvePreferences is empty; write %q when the library defaults apply", LibraryDefaults)
	}
	*c = names
	return nil
}

// Encode returns the document's exact bytes (indented JSON with a final
// newline, as written to profile.json) and their hex sha256, so that
// `sha256sum profile.json` prints the hash.
func (d Document) Encode() ([]byte, string, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, "", fmt.Errorf("encode profile.json: %w", err)
	}
	b = append(b, '\n')
	return b, HashJSON(b), nil
}

// HashJSON is the hex sha256 of profile.json bytes.
func HashJSON(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ParseDocument reads profile.json. Every field must be present; unknown
// fields are ignored so that a document written by a newer version still
// configures an older consumer. The document is checked as [Document.TLSConfig]
// would check it.
func ParseDocument(b []byte) (Document, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return Document{}, fmt.Errorf("%s is not a JSON object: %w", DocumentKey, err)
	}
	var missing []string
	for _, k := range []string{"type", "minTLSVersion", "ciphers", "cipherSuites", "groups", "curvePreferences", "componentArgs", "source"} {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Document{}, fmt.Errorf("%s lacks %v; regenerate it with tlsprofile.Resolve", DocumentKey, missing)
	}
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		return Document{}, fmt.Errorf("%s: %w", DocumentKey, err)
	}
	if d.Type == "" || ValidateType(string(d.Type)) != nil {
		return Document{}, fmt.Errorf("%s: %w", DocumentKey, fieldError("type", string(d.Type), "unknown profile type", "", ValidTypes()))
	}
	if d.Source != SourceStatic && d.Source != SourceCluster {
		return Document{}, fmt.Errorf("%s: %w", DocumentKey, fieldError("source", string(d.Source), "unknown profile source", "", []string{string(SourceStatic), string(SourceCluster)}))
	}
	if _, err := d.TLSConfig(); err != nil {
		return Document{}, err
	}
	want, err := d.componentArgsFor()
	if err != nil {
		return Document{}, err
	}
	if !slices.Equal(d.ComponentArgs, want) {
		return Document{}, fmt.Errorf("%s: %w", DocumentKey, fieldError("componentArgs", "", fmt.Sprintf("%q does not match the other fields, which give %q", d.ComponentArgs, want), "regenerate the document with tlsprofile.Resolve", nil))
	}
	return d, nil
}

// TLSConfig builds the *tls.Config the document stands for: MinVersion,
// CipherSuites (left nil when the minimum is TLS 1.3, since TLS 1.3 suites
// are not configurable) and CurvePreferences (left nil when the library
// defaults apply). It never returns an empty cipher list for a minimum
// below TLS 1.3. The caller adds certificates, ClientAuth, NextProtos.
func (d Document) TLSConfig() (*tls.Config, error) {
	minVersion, ok := d.MinTLSVersion.ID()
	if !ok {
		return nil, fmt.Errorf("%s: %w", DocumentKey, fieldError("minTLSVersion", string(d.MinTLSVersion), "unknown TLS version", "", ValidTLSVersions()))
	}
	cat := ciphers.NewCatalog()
	var suites []uint16
	for i, name := range d.CipherSuites {
		s, ok := cat.Go(name)
		if !ok || ciphers.TLS13Only(s) {
			return nil, fmt.Errorf("%s: %w", DocumentKey, fieldError(fmt.Sprintf("cipherSuites[%d]", i), name, "is not a TLS 1.0–1.2 suite Go crypto/tls implements", "regenerate the document with tlsprofile.Resolve", nil))
		}
		suites = append(suites, s.ID)
	}
	switch {
	case minVersion < tls.VersionTLS13 && len(suites) == 0:
		return nil, fmt.Errorf("%s: %w", DocumentKey, fieldError("cipherSuites", "", fmt.Sprintf("is empty but minTLSVersion %s allows TLS 1.2 and below", d.MinTLSVersion), "regenerate the document with tlsprofile.Resolve; an empty list would silently mean Go's defaults", nil))
	case minVersion >= tls.VersionTLS13 && len(suites) > 0:
		return nil, fmt.Errorf("%s: %w", DocumentKey, fieldError("cipherSuites", "", "must be empty when minTLSVersion is VersionTLS13 (TLS 1.3 suites are not configurable)", "regenerate the document with tlsprofile.Resolve", nil))
	}
	var curves []tls.CurveID
	for i, name := range d.CurvePreferences {
		id, err := ParseGroup(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", DocumentKey, at(fmt.Sprintf("curvePreferences[%d]", i), err))
		}
		if !slices.Contains(curves, id) {
			curves = append(curves, id)
		}
	}
	cfg := &tls.Config{MinVersion: minVersion}
	if minVersion < tls.VersionTLS13 {
		cfg.CipherSuites = suites
	}
	if len(curves) > 0 {
		cfg.CurvePreferences = curves
	}
	return cfg, nil
}

// TLSConfigFromJSON is what a consuming workload does at startup: parse the
// mounted profile.json and build its *tls.Config, with no API call.
func TLSConfigFromJSON(b []byte) (*tls.Config, error) {
	d, err := ParseDocument(b)
	if err != nil {
		return nil, err
	}
	return d.TLSConfig()
}

// TLSConfigFromFile reads profile.json from a mounted ConfigMap volume and
// builds the *tls.Config.
func TLSConfigFromFile(path string) (*tls.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read TLS profile: %w", err)
	}
	cfg, err := TLSConfigFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
