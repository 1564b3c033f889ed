package kmshealth

import (
	"errors"
	"fmt"
	"time"
)

// DefaultTimeouts are the read and write timeouts that fit interval: 5 s
// and 10 s at the default 30 s, a quarter and a half of shorter intervals,
// so a probe and a write always end before the next tick, at every
// interval that is allowed.
func DefaultTimeouts(interval time.Duration) (read, write time.Duration) {
	return min(DefaultReadTimeout, interval/4), min(DefaultWriteTimeout, interval/2)
}

// Timing names one of the three durations the rule is about.
type Timing int

// The durations of a reporter's tick.
const (
	Interval Timing = iota
	ReadTimeout
	WriteTimeout
)

// TimingError is a duration that breaks the rule: the interval at least
// MinInterval, each timeout positive and shorter than the interval.
type TimingError struct {
	Timing Timing
	Err    error
}

func (e TimingError) Error() string { return e.Err.Error() }

// CheckTimings is the one rule for a reporter's durations; each caller
// names the durations its own way (flags, attributes).
func CheckTimings(interval, read, write time.Duration) []TimingError {
	var errs []TimingError
	if interval < MinInterval {
		errs = append(errs, TimingError{Interval, fmt.Errorf("%s: must be at least %s", interval, MinInterval)})
	}
	for _, t := range []struct {
		timing Timing
		d      time.Duration
	}{{ReadTimeout, read}, {WriteTimeout, write}} {
		if t.d <= 0 || t.d >= interval {
			errs = append(errs, TimingError{t.timing, fmt.Errorf("%s: must be positive and shorter than the interval (%s), so that every probe ends before the next one", t.d, interval)})
		}
	}
	return errs
}

// CheckSockets checks plugin endpoints: each matches SocketPattern and no
// keyID is given twice (kms-1.sock and kms-01.sock are one key).
func CheckSockets(endpoints []string) error {
	var errs []error
	seen := map[string]string{}
	for _, s := range endpoints {
		sock, err := ParseSocket(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := seen[sock.KeyID]; dup {
			errs = append(errs, fmt.Errorf("KMS socket %q: keyID %s is already given by %q", s, sock.KeyID, prev))
		}
		seen[sock.KeyID] = s
	}
	return errors.Join(errs...)
}
