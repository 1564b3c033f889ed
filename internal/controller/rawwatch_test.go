package controller

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// TestFrames: a watch response splits into its events whatever the reads
// return (several events at once, one byte at a time), braces and quotes
// inside strings do not end an event, an event larger than the pooled
// buffer grows it, and once the stream is idle no buffer is held.
func TestFrames(t *testing.T) {
	big := `{"type":"ADDED","object":{"data":"` + strings.Repeat("x", 10000) + `"}}`
	tests := []struct {
		name    string
		body    string
		oneByte bool
		want    []string
		wantErr string
	}{
		{name: "lines", body: "{\"a\":1}\n{\"b\":[1,{\"c\":2}]}\n", want: []string{`{"a":1}`, `{"b":[1,{"c":2}]}`}},
		{name: "one byte at a time", oneByte: true, body: "{\"a\":1}\n\n  {\"b\":2}\n", want: []string{`{"a":1}`, `{"b":2}`}},
		{name: "braces and quotes in strings", oneByte: true, body: `{"s":"}{\"]\\"}` + "\n" + `{"t":"\\\\"}`,
			want: []string{`{"s":"}{\"]\\"}`, `{"t":"\\\\"}`}},
		{name: "larger than the pooled buffer", body: big + "\n" + `{"a":1}`, want: []string{big, `{"a":1}`}},
		{name: "not an object", body: "{\"a\":1}\n[1]\n", want: []string{`{"a":1}`}, wantErr: "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tc.body)
			if tc.oneByte {
				r = iotest.OneByteReader(r)
			}
			f := &frames{r: r}
			var got []string
			var err error
			for {
				var b []byte
				if b, err = f.next(); err != nil {
					break
				}
				got = append(got, string(b))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && !errors.Is(err, io.EOF):
				t.Errorf("ended with %v, want EOF", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ended with %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && f.buf != nil {
				t.Errorf("idle at the end, yet a buffer of %d bytes is held", cap(*f.buf))
			}
		})
	}
}
