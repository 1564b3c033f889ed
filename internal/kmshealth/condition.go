package kmshealth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PluginStatus is one plugin's state in the wire format.
type PluginStatus string

// The plugin states of the wire format.
const (
	StatusHealthy   PluginStatus = "healthy"
	StatusUnhealthy PluginStatus = "unhealthy"
	StatusError     PluginStatus = "error"
)

// Size bounds of the wire format. metav1.Condition allows a 32 KiB message;
// a node's message stays far below it.
const (
	MaxDetailBytes  = 256
	MaxMessageBytes = 16 * 1024
	// maxConditionMessage is the API server's own limit, which a message
	// read from the cluster cannot exceed.
	maxConditionMessage = 32 * 1024
)

// Plugin is one entry of a reporter condition's message.
type Plugin struct {
	KeyID       string       `json:"keyID"`
	KEKID       string       `json:"kekID,omitempty"`
	Status      PluginStatus `json:"status"`
	LastChecked time.Time    `json:"lastChecked"`
	Detail      string       `json:"detail,omitempty"`
}

// FormatMessage renders plugins as the minified JSON array of the wire
// format, ordered by keyID. When details would push the message over
// MaxMessageBytes they are shortened, then dropped; the verdicts never are.
func FormatMessage(plugins []Plugin) string {
	ps := append([]Plugin(nil), plugins...)
	sort.SliceStable(ps, func(i, j int) bool { return keyIDLess(ps[i].KeyID, ps[j].KeyID) })
	for _, limit := range []int{MaxDetailBytes, 64, 0} {
		for i := range ps {
			ps[i].Detail = truncate(ps[i].Detail, limit)
		}
		if b := marshal(ps); len(b) <= MaxMessageBytes || limit == 0 {
			return string(b)
		}
	}
	panic("unreachable")
}

func marshal(ps []Plugin) []byte {
	if ps == nil {
		ps = []Plugin{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ps); err != nil {
		// Plugin holds only strings and a time: encoding cannot fail.
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// MessagePattern is the wire format of a reporter condition's message as
// one regular expression (RE2, so CEL's matches() evaluates it too):
// exactly the minified JSON array FormatMessage writes, keys spelt exactly
// and in order, no white space. The reporter's admission policy makes the
// API server refuse any other message from a reporter, so the policy's
// reading of lastChecked and encoding/json's are the same: a key the
// policy's regular expression would miss (a "LastChecked", or "lastChecked"
// spelt with \u escapes, both of which encoding/json reads as lastChecked)
// cannot be written by a reporter at all.
const MessagePattern = `^\[(` + entryPattern + `(,` + entryPattern + `)*)?\]$`

const (
	jsonString   = `"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`
	rfc3339      = `"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})"`
	entryPattern = `\{"keyID":"(?:0|[1-9][0-9]*)"(?:,"kekID":` + jsonString + `)?` +
		`,"status":"(?:healthy|unhealthy|error)","lastChecked":` + rfc3339 +
		`(?:,"detail":` + jsonString + `)?\}`
)

// ParseMessage reads a reporter condition's message. It accepts fields it
// does not know and white space (another tool may write the same
// conditions on its own object) and rejects anything that breaks the
// format: not a JSON array, a keyID that is not a decimal number, a
// repeated keyID, an unknown status, a missing lastChecked. What a
// kmshealth reporter may write is narrower, MessagePattern, and the API
// server enforces it.
func ParseMessage(msg string) ([]Plugin, error) {
	if len(msg) > maxConditionMessage {
		return nil, fmt.Errorf("message is %d bytes, over the %d-byte condition limit", len(msg), maxConditionMessage)
	}
	var ps []Plugin
	dec := json.NewDecoder(bytes.NewReader([]byte(msg)))
	if err := dec.Decode(&ps); err != nil {
		return nil, fmt.Errorf("message is not a JSON array of plugin entries: %w", err)
	}
	// dec.More() would miss a stray ']' or '}': only the end may follow.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("message has data after the JSON array")
	}
	if ps == nil {
		return nil, errors.New("message is null, want a JSON array")
	}
	seen := make(map[string]bool, len(ps))
	for i, p := range ps {
		if p.KeyID == "" {
			return nil, fmt.Errorf("entry %d: keyID is missing", i)
		}
		// Canonical form only ("1", not "01"), as ParseSocket normalises it:
		// otherwise "01" and "1" would pass as two keys.
		if n, err := strconv.ParseUint(p.KeyID, 10, 64); err != nil || strconv.FormatUint(n, 10) != p.KeyID {
			return nil, fmt.Errorf("entry %d: keyID %q is not the socket's decimal sequence number (digits, no leading zeros)", i, p.KeyID)
		}
		if seen[p.KeyID] {
			return nil, fmt.Errorf("entry %d: keyID %q appears twice", i, p.KeyID)
		}
		seen[p.KeyID] = true
		switch p.Status {
		case StatusHealthy, StatusUnhealthy, StatusError:
		default:
			return nil, fmt.Errorf("entry %d (keyID %s): status %q, want healthy, unhealthy or error", i, p.KeyID, p.Status)
		}
		if p.LastChecked.IsZero() {
			return nil, fmt.Errorf("entry %d (keyID %s): lastChecked is missing", i, p.KeyID)
		}
	}
	return ps, nil
}

// Verdict is a node's condition status and reason for its plugins: any
// unhealthy plugin makes the node False/Unhealthy (a definite answer wins);
// otherwise any RPC error, or no plugin at all, makes it Unknown/Error;
// otherwise True/AsExpected.
func Verdict(plugins []Plugin) (metav1.ConditionStatus, string) {
	if len(plugins) == 0 {
		return metav1.ConditionUnknown, ReasonError
	}
	status, reason := metav1.ConditionTrue, ReasonAsExpected
	for _, p := range plugins {
		switch p.Status {
		case StatusUnhealthy:
			return metav1.ConditionFalse, ReasonUnhealthy
		case StatusError:
			status, reason = metav1.ConditionUnknown, ReasonError
		}
	}
	return status, reason
}

// ConditionBuilder builds a reporter's condition tick after tick and keeps
// lastTransitionTime at the last change of status, as metav1.Condition
// requires, without reading the object back.
type ConditionBuilder struct {
	Node   string
	last   metav1.ConditionStatus
	since  time.Time
	primed bool
}

// Build returns the node's condition for this tick's plugins.
func (b *ConditionBuilder) Build(plugins []Plugin, now time.Time) metav1.Condition {
	status, reason := Verdict(plugins)
	if !b.primed || status != b.last {
		b.last, b.since, b.primed = status, now.UTC().Truncate(time.Second), true
	}
	return metav1.Condition{
		Type:               ReporterConditionType(b.Node),
		Status:             status,
		Reason:             reason,
		Message:            FormatMessage(plugins),
		LastTransitionTime: metav1.NewTime(b.since),
	}
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n == 0 {
		return ""
	}
	const mark = "…"
	cut := n - len(mark)
	if cut <= 0 {
		return s[:0]
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
