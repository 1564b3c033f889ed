package kmshealth

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// t0 is the fixed "now" of these tests: the time of the example in
// ARCHITECTURE.md, "KMS health wire format".
var t0 = time.Date(2026, 5, 8, 12, 34, 56, 0, time.UTC)

func healthy(keyID, kekID string, checked time.Time) Plugin {
	return Plugin{KeyID: keyID, KEKID: kekID, Status: StatusHealthy, LastChecked: checked}
}

func unhealthy(keyID, kekID, detail string, checked time.Time) Plugin {
	return Plugin{KeyID: keyID, KEKID: kekID, Status: StatusUnhealthy, LastChecked: checked, Detail: detail}
}

func errored(keyID, detail string, checked time.Time) Plugin {
	return Plugin{KeyID: keyID, Status: StatusError, LastChecked: checked, Detail: detail}
}

func TestFormatMessage(t *testing.T) {
	tests := []struct {
		name    string
		plugins []Plugin
		want    string
	}{
		{
			name:    "nil is an empty array",
			plugins: nil,
			want:    `[]`,
		},
		{
			name:    "empty is an empty array",
			plugins: []Plugin{},
			want:    `[]`,
		},
		{
			name: "design example, sorted by keyID",
			plugins: []Plugin{
				healthy("2", "k-7f", t0),
				errored("1", "connection refused", t0.Add(-6*time.Second)),
			},
			want: `[{"keyID":"1","status":"error","lastChecked":"2026-05-08T12:34:50Z","detail":"connection refused"},` +
				`{"keyID":"2","kekID":"k-7f","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"}]`,
		},
		{
			name: "numeric order, not text order",
			plugins: []Plugin{
				healthy("10", "k", t0), healthy("2", "k", t0), healthy("1", "k", t0),
			},
			want: `[{"keyID":"1","kekID":"k","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"},` +
				`{"keyID":"2","kekID":"k","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"},` +
				`{"keyID":"10","kekID":"k","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"}]`,
		},
		{
			name:    "unhealthy keeps its kekID and detail",
			plugins: []Plugin{unhealthy("3", "k-1", `healthz "broken", want "ok"`, t0)},
			want:    `[{"keyID":"3","kekID":"k-1","status":"unhealthy","lastChecked":"2026-05-08T12:34:56Z","detail":"healthz \"broken\", want \"ok\""}]`,
		},
		{
			name:    "no HTML escaping",
			plugins: []Plugin{unhealthy("1", "k<&>", "a <b> & c", t0)},
			want:    `[{"keyID":"1","kekID":"k<&>","status":"unhealthy","lastChecked":"2026-05-08T12:34:56Z","detail":"a <b> & c"}]`,
		},
		{
			name:    "unicode stays unicode",
			plugins: []Plugin{errored("1", "clé 🔑 absente", t0)},
			want:    `[{"keyID":"1","status":"error","lastChecked":"2026-05-08T12:34:56Z","detail":"clé 🔑 absente"}]`,
		},
		{
			name:    "sub-second lastChecked is kept as given",
			plugins: []Plugin{healthy("1", "k", t0.Add(500*time.Millisecond))},
			want:    `[{"keyID":"1","kekID":"k","status":"healthy","lastChecked":"2026-05-08T12:34:56.5Z"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormatMessage(tt.plugins)
			if got != tt.want {
				t.Errorf("FormatMessage =\n%s\nwant\n%s", got, tt.want)
			}
			if strings.ContainsAny(got, "\n\t") || strings.Contains(got, ": ") {
				t.Errorf("FormatMessage is not minified: %s", got)
			}
		})
	}
}

func TestFormatMessageDoesNotModifyItsInput(t *testing.T) {
	long := strings.Repeat("x", 3*MaxDetailBytes)
	in := []Plugin{errored("2", long, t0), errored("1", "short", t0)}
	orig := append([]Plugin(nil), in...)
	_ = FormatMessage(in)
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("FormatMessage changed its input:\n%+v\nwas\n%+v", in, orig)
	}
}

func TestFormatMessageTruncatesLongDetail(t *testing.T) {
	// A detail over MaxDetailBytes is cut even when the message is small,
	// on a rune boundary ("é" is two bytes, so the cut cannot be exact).
	detail := strings.Repeat("é", MaxDetailBytes)
	ps, err := ParseMessage(FormatMessage([]Plugin{errored("1", detail, t0)}))
	if err != nil {
		t.Fatal(err)
	}
	got := ps[0].Detail
	if len(got) > MaxDetailBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("detail %q (%d bytes): want at most %d bytes of valid UTF-8 ending in …", got, len(got), MaxDetailBytes)
	}
	if !strings.HasPrefix(detail, strings.TrimSuffix(got, "…")) {
		t.Errorf("detail %q is not a prefix of the original", got)
	}
	if len(got) < MaxDetailBytes-4 {
		t.Errorf("detail cut to %d bytes, want close to %d", len(got), MaxDetailBytes)
	}
}

func TestFormatMessageStaysUnderLimit(t *testing.T) {
	detail := strings.Repeat("d", MaxDetailBytes) // exactly at the per-plugin bound
	many := func(n int) []Plugin {
		ps := make([]Plugin, n)
		for i := range ps {
			ps[i] = unhealthy(strconv.Itoa(n-i), "k-7f", detail, t0) // reverse order
		}
		return ps
	}
	tests := []struct {
		name        string
		n           int
		wantDetails string // each entry's detail after formatting
	}{
		{"fits: details kept", 10, detail},
		{"too big: details shortened", 60, truncate(detail, 64)},
		{"still too big: details dropped", 150, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := many(tt.n)
			msg := FormatMessage(in)
			if len(msg) > MaxMessageBytes {
				t.Fatalf("message is %d bytes, over MaxMessageBytes %d", len(msg), MaxMessageBytes)
			}
			got, err := ParseMessage(msg)
			if err != nil {
				t.Fatalf("ParseMessage(FormatMessage): %v", err)
			}
			if len(got) != tt.n {
				t.Fatalf("%d entries, want %d: verdicts must never be dropped", len(got), tt.n)
			}
			for i, p := range got {
				if want := strconv.Itoa(i + 1); p.KeyID != want {
					t.Fatalf("entry %d has keyID %s, want %s", i, p.KeyID, want)
				}
				if p.Status != StatusUnhealthy || p.KEKID != "k-7f" || !p.LastChecked.Equal(t0) {
					t.Fatalf("entry %d = %+v: status, kekID or lastChecked lost", i, p)
				}
				if p.Detail != tt.wantDetails {
					t.Fatalf("entry %d detail = %q (%d bytes), want %q", i, p.Detail, len(p.Detail), tt.wantDetails)
				}
			}
		})
	}
}

func TestParseMessage(t *testing.T) {
	t1 := t0.Add(-6 * time.Second)
	tests := []struct {
		name string
		msg  string
		want []Plugin
	}{
		{
			name: "empty array",
			msg:  `[]`,
			want: []Plugin{},
		},
		{
			name: "design example",
			msg:  `[{"keyID":"2","kekID":"k-7f","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"},{"keyID":"1","status":"error","lastChecked":"2026-05-08T12:34:50Z","detail":"connection refused"}]`,
			want: []Plugin{healthy("2", "k-7f", t0), errored("1", "connection refused", t1)}, // order as written
		},
		{
			name: "unhealthy",
			msg:  `[{"keyID":"1","kekID":"k-1","status":"unhealthy","lastChecked":"2026-05-08T12:34:56Z","detail":"empty key_id"}]`,
			want: []Plugin{unhealthy("1", "k-1", "empty key_id", t0)},
		},
		{
			name: "pretty printed",
			msg:  "[\n  {\n    \"keyID\": \"1\",\n    \"kekID\": \"k\",\n    \"status\": \"healthy\",\n    \"lastChecked\": \"2026-05-08T12:34:56Z\"\n  }\n]\n",
			want: []Plugin{healthy("1", "k", t0)},
		},
		{
			name: "unknown fields of a newer reporter",
			msg:  `[{"keyID":"1","kekID":"k","status":"healthy","lastChecked":"2026-05-08T12:34:56Z","latencyMs":3,"extra":{"a":[1,null]}}]`,
			want: []Plugin{healthy("1", "k", t0)},
		},
		{
			name: "keyID 0",
			msg:  `[{"keyID":"0","status":"error","lastChecked":"2026-05-08T12:34:56Z"}]`,
			want: []Plugin{errored("0", "", t0)},
		},
		{
			name: "offset and fractional seconds",
			msg:  `[{"keyID":"1","kekID":"k","status":"healthy","lastChecked":"2026-05-08T14:34:56.25+02:00"}]`,
			want: []Plugin{healthy("1", "k", t0.Add(250*time.Millisecond))},
		},
		{
			name: "exactly at the condition limit",
			msg:  "[" + strings.Repeat(" ", maxConditionMessage-2) + "]",
			want: []Plugin{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMessage(tt.msg)
			if err != nil {
				t.Fatalf("ParseMessage: %v", err)
			}
			if got == nil {
				t.Fatal("ParseMessage returned nil without an error")
			}
			if !reflect.DeepEqual(normalise(got), normalise(tt.want)) {
				t.Errorf("ParseMessage =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// normalise makes parsed plugins comparable with reflect.DeepEqual: times
// in UTC (parsing gives each offset its own *time.Location).
func normalise(ps []Plugin) []Plugin {
	out := make([]Plugin, len(ps))
	for i, p := range ps {
		p.LastChecked = p.LastChecked.UTC()
		out[i] = p
	}
	return out
}

func TestParseMessageRejects(t *testing.T) {
	const ok = `"status":"healthy","lastChecked":"2026-05-08T12:34:56Z"`
	tests := []struct {
		name    string
		msg     string
		wantErr string // part of the error text
	}{
		{"empty", ``, "not a JSON array"},
		{"object", `{"keyID":"1",` + ok + `}`, "not a JSON array"},
		{"string", `"[]"`, "not a JSON array"},
		{"number", `1`, "not a JSON array"},
		{"null", `null`, "null"},
		{"truncated", `[{"keyID":"1",` + ok, "not a JSON array"},
		{"unterminated array", `[`, "not a JSON array"},
		{"second array", `[] []`, "after the JSON array"},
		{"trailing word", `[]x`, "after the JSON array"},
		{"trailing bracket", `[]]`, "after the JSON array"},
		{"trailing brace", `[]}`, "after the JSON array"},
		{"trailing entry", `[{"keyID":"1",` + ok + `}],{}`, "after the JSON array"},
		{"null entry", `[null]`, "keyID is missing"},
		{"missing keyID", `[{` + ok + `}]`, "keyID is missing"},
		{"empty keyID", `[{"keyID":"",` + ok + `}]`, "keyID is missing"},
		{"numeric keyID", `[{"keyID":1,` + ok + `}]`, "not a JSON array"},
		{"word keyID", `[{"keyID":"a",` + ok + `}]`, "decimal"},
		{"negative keyID", `[{"keyID":"-1",` + ok + `}]`, "decimal"},
		{"signed keyID", `[{"keyID":"+1",` + ok + `}]`, "decimal"},
		{"hex keyID", `[{"keyID":"0x1",` + ok + `}]`, "decimal"},
		{"fractional keyID", `[{"keyID":"1.0",` + ok + `}]`, "decimal"},
		{"spaced keyID", `[{"keyID":" 1",` + ok + `}]`, "decimal"},
		{"zero-padded keyID", `[{"keyID":"01",` + ok + `}]`, "decimal"},
		{"huge keyID", `[{"keyID":"18446744073709551616",` + ok + `}]`, "decimal"},
		{"duplicate keyID", `[{"keyID":"1",` + ok + `},{"keyID":"2",` + ok + `},{"keyID":"1",` + ok + `}]`, "appears twice"},
		{"missing status", `[{"keyID":"1","lastChecked":"2026-05-08T12:34:56Z"}]`, "status"},
		{"unknown status", `[{"keyID":"1","status":"ok","lastChecked":"2026-05-08T12:34:56Z"}]`, "status \"ok\""},
		{"capitalised status", `[{"keyID":"1","status":"Healthy","lastChecked":"2026-05-08T12:34:56Z"}]`, "status"},
		{"missing lastChecked", `[{"keyID":"1","status":"healthy"}]`, "lastChecked is missing"},
		{"zero lastChecked", `[{"keyID":"1","status":"healthy","lastChecked":"0001-01-01T00:00:00Z"}]`, "lastChecked is missing"},
		{"bad lastChecked", `[{"keyID":"1","status":"healthy","lastChecked":"yesterday"}]`, "not a JSON array"},
		{"over the condition limit", "[" + strings.Repeat(" ", maxConditionMessage-1) + "]", "condition limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMessage(tt.msg)
			if err == nil {
				t.Fatalf("ParseMessage(%.80q) = %+v, want an error", tt.msg, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if got != nil {
				t.Errorf("ParseMessage returned %+v with its error", got)
			}
		})
	}
}

func TestParseMessageNamesTheEntry(t *testing.T) {
	msg := `[{"keyID":"1","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"},{"keyID":"7","status":"fine","lastChecked":"2026-05-08T12:34:56Z"}]`
	_, err := ParseMessage(msg)
	if err == nil || !strings.Contains(err.Error(), "entry 1") || !strings.Contains(err.Error(), "keyID 7") {
		t.Errorf("error %v: want it to name entry 1 and keyID 7", err)
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	in := []Plugin{
		unhealthy("3", "k-3", `healthz "broken", want "ok"`, t0),
		healthy("1", "arn:aws:kms:eu-west-1:111122223333:key/1234abcd", t0),
		errored("12", "rpc error: code = DeadlineExceeded desc = context deadline exceeded", t0.Add(-time.Second)),
		healthy("2", "ключ-🔑", t0),
	}
	got, err := ParseMessage(FormatMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	want := append([]Plugin(nil), in...)
	sort.Slice(want, func(i, j int) bool { return keyIDLess(want[i].KeyID, want[j].KeyID) })
	if !reflect.DeepEqual(normalise(got), normalise(want)) {
		t.Errorf("round trip =\n%+v\nwant\n%+v", got, want)
	}
}

func TestVerdict(t *testing.T) {
	h1, h2 := healthy("1", "k", t0), healthy("2", "k", t0)
	u := unhealthy("3", "k", "empty key_id", t0)
	e := errored("4", "connection refused", t0)
	tests := []struct {
		name       string
		plugins    []Plugin
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"no plugins", nil, metav1.ConditionUnknown, ReasonError},
		{"one healthy", []Plugin{h1}, metav1.ConditionTrue, ReasonAsExpected},
		{"all healthy", []Plugin{h1, h2}, metav1.ConditionTrue, ReasonAsExpected},
		{"one unhealthy", []Plugin{h1, u}, metav1.ConditionFalse, ReasonUnhealthy},
		{"one error", []Plugin{h1, e, h2}, metav1.ConditionUnknown, ReasonError},
		{"only errors", []Plugin{e}, metav1.ConditionUnknown, ReasonError},
		{"unhealthy wins over an earlier error", []Plugin{e, u}, metav1.ConditionFalse, ReasonUnhealthy},
		{"unhealthy wins over a later error", []Plugin{u, e}, metav1.ConditionFalse, ReasonUnhealthy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason := Verdict(tt.plugins)
			if status != tt.wantStatus || reason != tt.wantReason {
				t.Errorf("Verdict = %s/%s, want %s/%s", status, reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

func TestConditionBuilder(t *testing.T) {
	local := time.FixedZone("UTC+2", 2*3600)
	at := func(sec int) time.Time { // a "now" in another zone, with nanoseconds
		return t0.Add(time.Duration(sec)*time.Second + 123456789).In(local)
	}
	ok := []Plugin{healthy("1", "k", t0)}
	bad := []Plugin{healthy("1", "k", t0), unhealthy("2", "k", "empty key_id", t0)}
	badAndErr := []Plugin{unhealthy("2", "k", "empty key_id", t0), errored("3", "refused", t0)}
	errs := []Plugin{errored("3", "refused", t0)}

	steps := []struct {
		plugins    []Plugin
		now        int
		wantStatus metav1.ConditionStatus
		wantReason string
		wantSince  int // seconds after t0 of lastTransitionTime
	}{
		{ok, 0, metav1.ConditionTrue, ReasonAsExpected, 0},
		{ok, 30, metav1.ConditionTrue, ReasonAsExpected, 0},
		{bad, 60, metav1.ConditionFalse, ReasonUnhealthy, 60},
		{badAndErr, 90, metav1.ConditionFalse, ReasonUnhealthy, 60},
		{errs, 120, metav1.ConditionUnknown, ReasonError, 120},
		{nil, 150, metav1.ConditionUnknown, ReasonError, 120}, // same status, other cause: no transition
		{ok, 180, metav1.ConditionTrue, ReasonAsExpected, 180},
		{ok, 210, metav1.ConditionTrue, ReasonAsExpected, 180},
	}
	b := &ConditionBuilder{Node: "ip-10-0-0-1.ec2.internal"}
	for i, s := range steps {
		c := b.Build(s.plugins, at(s.now))
		want := metav1.Condition{
			Type:               "KMSHealthReporter_ip-10-0-0-1.ec2.internal",
			Status:             s.wantStatus,
			Reason:             s.wantReason,
			Message:            FormatMessage(s.plugins),
			LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(s.wantSince) * time.Second)),
		}
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("step %d: Build =\n%+v\nwant\n%+v", i, c, want)
		}
		if loc := c.LastTransitionTime.Location(); loc != time.UTC {
			t.Fatalf("step %d: lastTransitionTime in %v, want UTC", i, loc)
		}
	}
}

func TestConditionBuildersAreIndependent(t *testing.T) {
	a := &ConditionBuilder{Node: "a"}
	b := &ConditionBuilder{Node: "b"}
	a.Build([]Plugin{healthy("1", "k", t0)}, t0)
	cb := b.Build([]Plugin{healthy("1", "k", t0)}, t0.Add(time.Minute))
	if !cb.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("b's first condition has lastTransitionTime %v, want its own first build time", cb.LastTransitionTime)
	}
	if cb.Type != "KMSHealthReporter_b" {
		t.Errorf("type %s", cb.Type)
	}
}

func TestConditionMessageIsParseable(t *testing.T) {
	b := &ConditionBuilder{Node: "n"}
	in := []Plugin{errored("2", "refused", t0), healthy("1", "k", t0)}
	c := b.Build(in, t0)
	got, err := ParseMessage(c.Message)
	if err != nil {
		t.Fatalf("ParseMessage(Build().Message): %v", err)
	}
	if status, _ := Verdict(got); status != c.Status {
		t.Errorf("parsed message gives %s, condition says %s", status, c.Status)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 10, ""},
		{"abc", 3, "abc"},
		{"abc", 10, "abc"},
		{"abcdef", 0, ""},
		{"abcdef", 2, ""}, // no room for the mark
		{"abcdef", 3, ""},
		{"abcdef", 4, "a…"},
		{"abcdef", 5, "ab…"},
		{"ééé", 6, "ééé"},
		{"éééé", 6, "é…"},   // "…" is 3 bytes; 3 left, one whole "é"
		{"aaééé", 6, "aa…"}, // cut lands inside "é": back to its start
		{"🔑🔑", 6, "…"},      // no whole rune fits
	}
	for _, tt := range tests {
		got := truncate(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if len(got) > tt.n {
			t.Errorf("truncate(%q, %d) = %q is %d bytes, over the bound", tt.s, tt.n, got, len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("truncate(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
		}
	}
}

// FuzzParseMessage checks that nothing read from a cluster can crash the
// aggregator or the data source, and that what parses survives a format
// and parse again unchanged apart from ordering and detail shortening.
// Seeds: testdata/fuzz/FuzzParseMessage.
func FuzzParseMessage(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		p1, err := ParseMessage(msg)
		if err != nil {
			if p1 != nil {
				t.Fatalf("ParseMessage returned %d entries with error %v", len(p1), err)
			}
			return
		}
		checkParsed(t, p1)

		s1 := FormatMessage(p1)
		if !json.Valid([]byte(s1)) {
			t.Fatalf("FormatMessage gave invalid JSON: %q", s1)
		}
		// What a reporter writes, its admission policy must let through.
		if !messageRE.MatchString(s1) {
			t.Fatalf("FormatMessage wrote %q, which MessagePattern refuses", s1)
		}
		// The format only ever shortens details; without any it must fit.
		bare := make([]Plugin, len(p1))
		for i, p := range p1 {
			p.Detail = ""
			bare[i] = p
		}
		if len(FormatMessage(bare)) <= MaxMessageBytes && len(s1) > MaxMessageBytes {
			t.Fatalf("FormatMessage is %d bytes, over %d, though it fits without details", len(s1), MaxMessageBytes)
		}
		if len(s1) > maxConditionMessage {
			// Long kekIDs can grow in re-encoding (e.g. U+2028 is written
			// as \u2028); such a message could not be written anyway.
			return
		}

		p2, err := ParseMessage(s1)
		if err != nil {
			t.Fatalf("ParseMessage(FormatMessage(%q)) = %v\nformatted: %q", msg, err, s1)
		}
		checkParsed(t, p2)
		if !sort.SliceIsSorted(p2, func(i, j int) bool { return keyIDLess(p2[i].KeyID, p2[j].KeyID) }) {
			t.Fatalf("FormatMessage did not sort by keyID: %q", s1)
		}

		// p2 is p1 sorted, with every detail cut to one of the limits.
		want := append([]Plugin(nil), p1...)
		sort.SliceStable(want, func(i, j int) bool { return keyIDLess(want[i].KeyID, want[j].KeyID) })
		matched := false
		for _, limit := range []int{MaxDetailBytes, 64, 0} {
			cut := make([]Plugin, len(want))
			for i, p := range want {
				p.Detail = truncate(p.Detail, limit)
				cut[i] = p
			}
			if reflect.DeepEqual(normalise(p2), normalise(cut)) {
				matched = true
				break
			}
		}
		if !matched {
			t.Fatalf("round trip changed more than order and details:\nin:  %+v\nout: %+v", p1, p2)
		}

		// A second round changes nothing at all.
		if s2 := FormatMessage(p2); s2 != s1 {
			t.Fatalf("FormatMessage is not stable:\nfirst:  %q\nsecond: %q", s1, s2)
		}
	})
}

// checkParsed asserts the invariants ParseMessage promises its callers.
func checkParsed(t *testing.T, ps []Plugin) {
	t.Helper()
	seen := map[string]bool{}
	for i, p := range ps {
		n, err := strconv.ParseUint(p.KeyID, 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != p.KeyID {
			t.Fatalf("entry %d: keyID %q accepted but not a canonical decimal number", i, p.KeyID)
		}
		if seen[p.KeyID] {
			t.Fatalf("entry %d: keyID %q accepted twice", i, p.KeyID)
		}
		seen[p.KeyID] = true
		switch p.Status {
		case StatusHealthy, StatusUnhealthy, StatusError:
		default:
			t.Fatalf("entry %d: status %q accepted", i, p.Status)
		}
		if p.LastChecked.IsZero() {
			t.Fatalf("entry %d: zero lastChecked accepted", i)
		}
	}
}

func TestReporterFieldManager(t *testing.T) {
	// First 16 hex of sha256, computed outside Go:
	//   printf %s ip-10-0-0-1.ec2.internal | sha256sum
	tests := map[string]string{
		"ip-10-0-0-1.ec2.internal": "kms-health-reporter-f8d8022819ba8c40",
		"node-a":                   "kms-health-reporter-66570ff05a207404",
	}
	for node, want := range tests {
		if got := ReporterFieldManager(node); got != want {
			t.Errorf("ReporterFieldManager(%q) = %q, want %q", node, got, want)
		}
	}
	long := strings.Repeat("a", 253)
	if got := ReporterFieldManager(long); len(got) != len("kms-health-reporter-")+16 {
		t.Errorf("ReporterFieldManager of a 253-character name = %q, want a fixed length", got)
	}
	if ReporterFieldManager("node-a") == ReporterFieldManager("node-b") {
		t.Error("two nodes share a field manager")
	}
}

func TestReporterConditionType(t *testing.T) {
	if got := ReporterConditionType("cp-1"); got != "KMSHealthReporter_cp-1" {
		t.Errorf("ReporterConditionType = %q", got)
	}
	tests := []struct {
		typ      string
		wantNode string
		wantOK   bool
	}{
		{"KMSHealthReporter_cp-1", "cp-1", true},
		{"KMSHealthReporter_ip-10-0-0-1.ec2.internal", "ip-10-0-0-1.ec2.internal", true},
		{"KMSHealthReporter_", "", false},
		{"KMSPluginsDegraded", "", false},
		{"Available", "", false},
		{"kmshealthreporter_cp-1", "", false},
		{"xKMSHealthReporter_cp-1", "", false},
	}
	for _, tt := range tests {
		node, ok := NodeFromConditionType(tt.typ)
		if ok != tt.wantOK || (ok && node != tt.wantNode) {
			t.Errorf("NodeFromConditionType(%q) = %q, %v, want %q, %v", tt.typ, node, ok, tt.wantNode, tt.wantOK)
		}
	}
	for _, typ := range []string{ReporterConditionType("n"), DegradedCondition} {
		if !IsOurs(typ) {
			t.Errorf("IsOurs(%q) = false", typ)
		}
	}
	for _, typ := range []string{"Available", "KMSHealthReporter_", "Degraded"} {
		if IsOurs(typ) {
			t.Errorf("IsOurs(%q) = true", typ)
		}
	}
}

func TestValidateNodeName(t *testing.T) {
	for _, ok := range []string{"cp-1", "ip-10-0-0-1.ec2.internal", strings.Repeat("a", 253)} {
		if err := ValidateNodeName(ok); err != nil {
			t.Errorf("ValidateNodeName(%.20q…): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "CP-1", "cp_1", "-cp", strings.Repeat("a", 254), "a/b"} {
		err := ValidateNodeName(bad)
		if err == nil {
			t.Errorf("ValidateNodeName(%.20q…) = nil, want an error", bad)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("error %q does not name the node", err)
		}
	}
}

var messageRE = regexp.MustCompile(MessagePattern)

// TestMessagePattern: every message a reporter writes matches the pattern
// its admission policy enforces (details of any content), and the spellings
// encoding/json would still read as a report, but the policy's reading of
// lastChecked would miss, do not.
func TestMessagePattern(t *testing.T) {
	nasty := []string{"", `quote " and backslash \\`, "<html> & \u2028 \x00 \x1f \t\n", "\xff\xfe invalid UTF-8", strings.Repeat("é", 300),
		`"lastChecked":"2099-01-01T00:00:00Z"`}
	for _, d := range nasty {
		for _, ps := range [][]Plugin{
			nil,
			{errored("1", d, t0)},
			{healthy("2", d, t0.In(time.FixedZone("x", 5*3600+1800))), unhealthy("10", "k", d, t0.Add(123456789))},
		} {
			if msg := FormatMessage(ps); !messageRE.MatchString(msg) {
				t.Errorf("FormatMessage wrote %q, which MessagePattern refuses", msg)
			}
		}
	}
	good := `[{"keyID":"1","kekID":"k","status":"healthy","lastChecked":"2026-05-08T12:34:56Z"}]`
	if !messageRE.MatchString(good) {
		t.Fatalf("the wire format's example %s does not match", good)
	}
	for name, msg := range map[string]string{
		"key in another case":      strings.Replace(good, `"lastChecked"`, `"LastChecked"`, 1),
		"key spelt with an escape": strings.Replace(good, `"lastChecked"`, `"lastChe\u0063ked"`, 1),
		"second lastChecked":       strings.Replace(good, `}]`, `,"lastChecked":"2099-01-01T00:00:00Z"}]`, 1),
		"unknown key":              strings.Replace(good, `}]`, `,"x":1}]`, 1),
		"keys reordered":           `[{"status":"healthy","keyID":"1","lastChecked":"2026-05-08T12:34:56Z"}]`,
		"white space":              strings.Replace(good, `:`, `: `, 1),
		"two arrays":               good + good,
		"unknown status":           strings.Replace(good, `healthy`, `ok`, 1),
		"zero-padded keyID":        strings.Replace(good, `"1"`, `"01"`, 1),
		"lastChecked not a time":   strings.Replace(good, `2026-05-08T12:34:56Z`, `soon`, 1),
		"unescaped control char":   strings.Replace(good, `"k"`, "\"k\x01\"", 1),
	} {
		if _, err := ParseMessage(msg); err != nil && name == "key in another case" {
			t.Errorf("%s: encoding/json no longer reads it (%v): the test no longer shows the gap the pattern closes", name, err)
		}
		if messageRE.MatchString(msg) {
			t.Errorf("%s: %s matches MessagePattern, want refused", name, msg)
		}
	}
}
