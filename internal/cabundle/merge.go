package cabundle

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// InputError is a Merge input that is not a bundle of certificates alone.
type InputError struct {
	// Index is the input's position, from 0.
	Index int
	// Err names the PEM block and what is wrong with it.
	Err error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("PEM input %d: %v", e.Index+1, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// ErrNoCertificates is Merge's error when every input is empty.
var ErrNoCertificates = errors.New("no input holds a certificate: give at least one PEM \"CERTIFICATE\" block")

// Merge joins several PEM bundles into one, as a CA rotation needs (the old
// CA and the new one, both trusted for a while): each certificate once,
// identified by its DER, in the order first seen, re-encoded as PEM without
// headers or text around it (the form [Info.Canonical] writes). Inputs that
// are empty or white space are skipped, so an input that does not exist yet
// may be passed as "". An input that is anything but certificates is an
// *InputError naming the input and its PEM block, judged as [Inspect] judges
// a bundle; an expired certificate is not an error here.
func Merge(inputs [][]byte) ([]byte, error) {
	var (
		out  []byte
		seen = map[string]bool{}
	)
	for i, in := range inputs {
		if len(bytes.TrimSpace(in)) == 0 {
			continue
		}
		// The zero time judges no certificate expired: only the structure counts.
		info, findings := Inspect(in, time.Time{})
		if err := FirstError(findings); err != nil {
			return nil, &InputError{Index: i, Err: err}
		}
		for _, c := range info.Certificates {
			if seen[string(c.DER)] {
				continue
			}
			seen[string(c.DER)] = true
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER})...)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoCertificates
	}
	return out, nil
}

// Describe returns each certificate of a PEM bundle, in order, with no
// judgement of expiry or CA flags: what a plan-time check needs to look at.
// A bundle that is anything but certificates is an error naming the PEM
// block (its number, from 1, and its type).
func Describe(bundle []byte) ([]Certificate, error) {
	if len(bytes.TrimSpace(bundle)) == 0 {
		return nil, errors.New("the PEM is empty: give one or more PEM \"CERTIFICATE\" blocks")
	}
	info, findings := Inspect(bundle, time.Time{})
	if err := FirstError(findings); err != nil {
		return nil, err
	}
	return info.Certificates, nil
}
