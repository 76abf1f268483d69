// Package logtest helps tests read what a component logs while it runs.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log destination (slog.NewTextHandler(&b, nil)) safe for
// concurrent writes, readable while it is written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
