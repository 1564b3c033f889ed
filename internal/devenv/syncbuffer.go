package devenv

import (
	"bytes"
	"sync"
)

// SyncBuffer collects a process's output, written from any goroutine, to
// show it later (a test's log, a failed run's report). Its zero value is
// ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
