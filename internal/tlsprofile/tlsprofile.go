// Package tlsprofile is the TLS security profile pattern (pattern 2 of
// ARCHITECTURE.md): it turns an OpenShift-style profile — Old,
// Intermediate, Modern or Custom, as in config.openshift.io/v1
// APIServer.spec.tlsSecurityProfile — into what Go's crypto/tls can honour,
// and into the profile.json document that consuming workloads mount and
// read at startup without calling the API server.
//
// The steps are pure and shared by the Terraform resource and the reconciler:
//
//   - [ValidateSpec] and the single-value validators check user input at plan
//     time and list the valid names;
//   - [FromAPIServer] reads the cluster's APIServer object into a [Spec] and
//     its tlsAdherence;
//   - [Resolve] translates a [Spec] (OpenSSL → IANA names, group names → Go
//     curve IDs), drops or refuses what Go cannot honour (and, with FIPS,
//     what FIPS does not approve), and builds the [Document] with its exact
//     JSON bytes, their sha256 [Resolved.Hash] and the Kubernetes component
//     flags ([Document.ComponentArgs]);
//   - [TLSConfigFromJSON] (or [Document.TLSConfig]) is what a consuming
//     workload calls at startup to get its *tls.Config.
//
// Nothing here talks to the API server and there is no package-level mutable
// state: every table is built by a function on each call.
package tlsprofile

import "slices"

// ProfileType names a TLS security profile, spelled as in OpenShift's
// config.openshift.io/v1 TLSProfileType.
type ProfileType string

// The profile types. Intermediate is the default, as in OpenShift.
const (
	ProfileOld          ProfileType = "Old"
	ProfileIntermediate ProfileType = "Intermediate"
	ProfileModern       ProfileType = "Modern"
	ProfileCustom       ProfileType = "Custom"

	DefaultProfile = ProfileIntermediate
)

// ValidTypes lists the profile types in the order OpenShift documents them.
func ValidTypes() []string {
	return []string{string(ProfileOld), string(ProfileIntermediate), string(ProfileModern), string(ProfileCustom)}
}

// TLSVersion is a minimum protocol version, spelled as in OpenShift's
// TLSProtocolVersion.
type TLSVersion string

// The TLS versions a profile may ask for. SSLv3 is not one of them (neither
// OpenShift nor Go support it).
const (
	VersionTLS10 TLSVersion = "VersionTLS10"
	VersionTLS11 TLSVersion = "VersionTLS11"
	VersionTLS12 TLSVersion = "VersionTLS12"
	VersionTLS13 TLSVersion = "VersionTLS13"
)

// ValidTLSVersions lists the TLS versions, lowest first.
func ValidTLSVersions() []string {
	return []string{string(VersionTLS10), string(VersionTLS11), string(VersionTLS12), string(VersionTLS13)}
}

// ID returns the crypto/tls protocol version (tls.VersionTLS10 …), or false
// for an unknown name.
func (v TLSVersion) ID() (uint16, bool) {
	switch v {
	case VersionTLS10:
		return 0x0301, true
	case VersionTLS11:
		return 0x0302, true
	case VersionTLS12:
		return 0x0303, true
	case VersionTLS13:
		return 0x0304, true
	}
	return 0, false
}

// ParseTLSVersion returns the crypto/tls protocol version for a name such as
// "VersionTLS12", or an error listing the valid names.
func ParseTLSVersion(name string) (uint16, error) {
	id, ok := TLSVersion(name).ID()
	if !ok {
		return 0, fieldError("", name, "unknown TLS version", "", ValidTLSVersions())
	}
	return id, nil
}

// Source says where a profile came from; it is recorded in profile.json.
type Source string

const (
	// SourceStatic is a profile given in the Terraform configuration.
	SourceStatic Source = "static"
	// SourceCluster is a profile read from the OpenShift APIServer object.
	SourceCluster Source = "cluster"
)

// Profile is a fully specified profile: what a predefined type stands for,
// or what a Custom spec asks for. Ciphers are OpenSSL or IANA names, TLS 1.3
// suites included; Groups are key-exchange group names (formerly called
// curves), spelled as OpenShift's TLSGroup enum.
type Profile struct {
	Type          ProfileType
	MinTLSVersion TLSVersion
	Ciphers       []string
	Groups        []string
}

// ProfileSourceVersion records which OpenShift API text the predefined
// profiles follow, so a change of the lists is a deliberate, visible edit.
//
// They are openshift/api config/v1 TLSProfiles (types_tlssecurityprofile.go,
// read at commit 2a3d73913b5a7caec4c57d5c3d04f51106ec4da3; the lists were
// last changed there by f2ddf1eb and 816b38ee, May 2026), after Mozilla's
// Server Side TLS guidelines version 5.8: each cipher list is Mozilla's
// "ciphersuites" (TLS 1.3) followed by its "ciphers" (Intermediate has no
// DHE suites any more; Modern is TLS 1.3 only), and every predefined profile
// names the groups X25519MLKEM768, X25519, secp256r1 and secp384r1.
const ProfileSourceVersion = "openshift/api config/v1 TLSProfiles at 2a3d73913b5a7caec4c57d5c3d04f51106ec4da3, Mozilla Server Side TLS guidelines 5.8"

// Predefined returns the profile a predefined type stands for, exactly as
// OpenShift's config.openshift.io/v1 TLSProfiles defines it (see
// [ProfileSourceVersion]), as fresh slices the caller may keep. It returns
// false for Custom and for unknown types.
func Predefined(t ProfileType) (Profile, bool) {
	tls13 := []string{
		"TLS_AES_128_GCM_SHA256",
		"TLS_AES_256_GCM_SHA384",
		"TLS_CHACHA20_POLY1305_SHA256",
	}
	intermediate := []string{
		"ECDHE-ECDSA-AES128-GCM-SHA256",
		"ECDHE-RSA-AES128-GCM-SHA256",
		"ECDHE-ECDSA-AES256-GCM-SHA384",
		"ECDHE-RSA-AES256-GCM-SHA384",
		"ECDHE-ECDSA-CHACHA20-POLY1305",
		"ECDHE-RSA-CHACHA20-POLY1305",
	}
	old := []string{
		"ECDHE-ECDSA-AES128-SHA256",
		"ECDHE-RSA-AES128-SHA256",
		"ECDHE-ECDSA-AES128-SHA",
		"ECDHE-RSA-AES128-SHA",
		"ECDHE-ECDSA-AES256-SHA384",
		"ECDHE-RSA-AES256-SHA384",
		"ECDHE-ECDSA-AES256-SHA",
		"ECDHE-RSA-AES256-SHA",
		"AES128-GCM-SHA256",
		"AES256-GCM-SHA384",
		"AES128-SHA256",
		"AES256-SHA256",
		"AES128-SHA",
		"AES256-SHA",
		"DES-CBC3-SHA",
	}
	groups := []string{"X25519MLKEM768", "X25519", "secp256r1", "secp384r1"}
	switch t {
	case ProfileOld:
		return Profile{Type: t, MinTLSVersion: VersionTLS10, Ciphers: slices.Concat(tls13, intermediate, old), Groups: groups}, true
	case ProfileIntermediate:
		return Profile{Type: t, MinTLSVersion: VersionTLS12, Ciphers: slices.Concat(tls13, intermediate), Groups: groups}, true
	case ProfileModern:
		return Profile{Type: t, MinTLSVersion: VersionTLS13, Ciphers: tls13, Groups: groups}, true
	}
	return Profile{}, false
}

// ValidateType checks a profile type name; the empty string is accepted and
// means the default, Intermediate.
func ValidateType(name string) error {
	if name == "" || slices.Contains(ValidTypes(), name) {
		return nil
	}
	return fieldError("", name, "unknown profile type", "", ValidTypes())
}

// ValidateTLSVersion checks a minimum TLS version name.
func ValidateTLSVersion(name string) error {
	_, err := ParseTLSVersion(name)
	return err
}
