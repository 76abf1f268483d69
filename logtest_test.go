package respool

import (
	"io"
	"log/slog"
	"sync"
	"testing"
)

// testLogger returns a logger for a pool under test that writes to the
// test's output (t.Output): shown when the test fails (or with -v) beside
// the test's own lines, not on the test binary's stderr for every test.
// Lines logged once the test has ended (a pool closing in the background)
// are dropped.
func testLogger(t testing.TB) *slog.Logger {
	w := &testOutput{w: t.Output()}
	t.Cleanup(func() {
		w.mu.Lock()
		w.w = nil
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testOutput writes to a test's output until the test ends.
type testOutput struct {
	mu sync.Mutex
	w  io.Writer // the test's output; nil once the test has ended (guarded by mu)
}

func (o *testOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w != nil {
		return o.w.Write(b)
	}
	return len(b), nil
}
