package testing

import (
	"bytes"
	"sync"
)

// SyncBuffer is an io.Writer whose content can be read while another
// goroutine (a process's output copier, a log sink) writes to it.
type SyncBuffer struct {
	// mu guards buf.
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
