package reconciler

import (
	"runtime/debug"
	"testing"
)

// TestLessHeadroom: the reconciler collects at GOGC=50 unless GOGC says
// otherwise; a user's setting wins.
func TestLessHeadroom(t *testing.T) {
	const sentinel = 123
	for _, tc := range []struct {
		name, gogc string
		want       int
	}{
		{name: "GOGC unset", want: gcPercent},
		{name: "GOGC set", gogc: "200", want: sentinel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			// The runtime read GOGC at start: set a sentinel to see
			// whether lessHeadroom changes it, and put the old one back.
			old := debug.SetGCPercent(sentinel)
			t.Cleanup(func() { debug.SetGCPercent(old) })
			lessHeadroom()
			if got := debug.SetGCPercent(sentinel); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
