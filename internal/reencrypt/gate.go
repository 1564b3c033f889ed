package reencrypt

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Health is the KMS health gate's judgement, as the reports of every
// control-plane node's KMS plugins say it (package kmshealth judges them;
// the provider hands the verdict in, since one pattern does not import
// another).
type Health struct {
	// Target names where the reports were read, for messages.
	Target string
	// RotationReady: every node reported, fresh, every plugin healthy, and
	// all nodes agree on the kekID of each plugin.
	RotationReady bool
	// Problems say why not, one line each.
	Problems []string
	// KEKIDs maps each plugin's keyID (its socket's sequence number) to the
	// kekID every node reports for it.
	KEKIDs map[string]string
	// APIServer, when not empty, says why kube-apiserver itself is not
	// writing with the key yet (it adopts a plugin's new key only at its
	// next KMS Status poll): a run now would store objects under the old
	// key. Empty when it writes with the key, or when that cannot be read.
	APIServer string
}

// Gate reads and judges the KMS health right before a run writes.
type Gate func(ctx context.Context) (Health, error)

// ErrGate is wrapped by every refusal of the gate.
var ErrGate = errors.New("the KMS health gate refuses the re-encryption")

// CheckHealth refuses a run unless the plugins are rotation ready and
// the write plugin's kekID is keyID: rewriting while a plugin is unhealthy
// fails half-way, and rewriting while the plugins are on another key would
// re-encrypt every object under the key that is being retired. With
// several plugins per node (a rotation by a new socket), the write plugin
// is taken to be the one with the highest keyID, the newest socket.
func CheckHealth(h Health, keyID string) error {
	if !h.RotationReady {
		return fmt.Errorf("%w: the KMS plugins (%s) are not healthy, fresh and in agreement:\n  - %s\nFix them and apply again; nothing was rewritten",
			ErrGate, h.Target, strings.Join(h.Problems, "\n  - "))
	}
	if len(h.KEKIDs) == 0 {
		return fmt.Errorf("%w: no node reports a kekID for any plugin (%s); nothing was rewritten", ErrGate, h.Target)
	}
	active := ActivePlugin(h.KEKIDs)
	if got := h.KEKIDs[active]; got != keyID {
		return fmt.Errorf("%w: the KMS plugins (%s) are on key %q (plugin keyID %s), not on key_id %q: rewriting now would "+
			"re-encrypt under %q. Set key_id to the plugins' kekID (e.g. the kmshealth_kms_plugin_health data source's "+
			"active_kek_ids), or finish the rotation first; nothing was rewritten", ErrGate, h.Target, got, active, keyID, got)
	}
	if h.APIServer != "" {
		return fmt.Errorf("%w: %s; nothing was rewritten", ErrGate, h.APIServer)
	}
	return nil
}

// ActivePlugin is the keyID of the plugin new data is written with: the
// highest sequence number (numeric where both are numbers).
func ActivePlugin(kekIDs map[string]string) string {
	ids := make([]string, 0, len(kekIDs))
	for id := range kekIDs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return keyIDLess(ids[i], ids[j]) })
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1]
}

func keyIDLess(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}
