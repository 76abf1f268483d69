package pool

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// newLoggedHarness is newHarness with the pool's log, every level, in log.
func newLoggedHarness(t *testing.T, cfg Config) (*harness, *logBuffer) {
	t.Helper()
	log := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return newHarness(t, cfg), log
}

// linesAt returns the lines of log at level (DEBUG, INFO, WARN, ERROR).
func linesAt(log *logBuffer, level string) []string {
	var out []string
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, " level="+level+" ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// A failure whose caller gets the error is the caller's to report: the pool
// logs it at Debug, not at Warn (a command-line program printed each failed
// attempt twice: a WARN line on slog.Default, then its own error). Once
// the run of failures persists (the attempt after the backoff fails too),
// one Warn line says so at once, and its end one Info line; in between, at
// most one line per LogInterval.
func TestCreateFailureTheCallerGetsIsNotLoggedAtWarn(t *testing.T) {
	h, log := newLoggedHarness(t, Config{MaxObjects: 2, BackoffInitial: time.Second, BackoffMax: time.Second, FailureLogInterval: 10 * time.Second})
	h.failEverySecond(1)
	if w := linesAt(log, "WARN"); len(w) != 0 {
		t.Fatalf("one failure, which its caller got, logged at Warn: %q", w)
	}
	if d := linesAt(log, "DEBUG"); len(d) != 1 || !strings.Contains(d[0], `msg="create failed"`) || !strings.Contains(d[0], "in_a_row=1") {
		t.Fatalf("debug lines %q; want the first failure, once", d)
	}

	h.failAgain() // the next attempt fails too: the run persists
	w := linesAt(log, "WARN")
	if len(w) != 1 || !strings.Contains(w[0], `msg="create failed"`) || !strings.Contains(w[0], "in_a_row=2") || !strings.Contains(w[0], "failures=2") {
		t.Fatalf("warn lines %q; want one, at once, for the run's 2 failures", w)
	}
	for range 3 { // within the LogInterval: no line
		h.failAgain()
	}
	if w := linesAt(log, "WARN"); len(w) != 1 {
		t.Fatalf("warn lines %q; want still one within the LogInterval", w)
	}

	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.clk.Advance(10 * time.Second)
	h.ev.wait(t, "retry", 1)
	h.giveBack(h.take())
	if i := linesAt(log, "INFO"); len(i) != 1 || !strings.Contains(i[0], `msg="create recovered"`) {
		t.Fatalf("info lines %q; want the recovery", i)
	}
}

// A run of failures that their callers got and that ends with the next
// attempt logs nothing above Debug, its end included; a tick does not
// report it later.
func TestShortFailureRunTheCallersGotStaysAtDebug(t *testing.T) {
	h, log := newLoggedHarness(t, Config{MaxObjects: 2, BackoffInitial: time.Second, BackoffMax: time.Second, FailureLogInterval: 10 * time.Second})
	h.failEverySecond(1)
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.heldBack()
	h.clk.Advance(time.Second)
	h.ev.wait(t, "retry", 1)
	h.giveBack(h.take())
	h.clk.Tick(t, 30*time.Second) // ticks
	for _, level := range []string{"INFO", "WARN", "ERROR"} {
		if l := linesAt(log, level); len(l) != 0 {
			t.Errorf("%s lines %q; want none", level, l)
		}
	}
	if d := linesAt(log, "DEBUG"); !strings.Contains(strings.Join(d, "\n"), `msg="create recovered"`) {
		t.Errorf("debug lines %q; want the failure and the recovery", d)
	}
}

// A failure nobody gets (a creation for MinIdle) is logged at Warn at
// once: the log is its only report.
func TestCreateFailureNobodyGetsIsLoggedAtWarn(t *testing.T) {
	log := &logBuffer{}
	cfg := Config{MaxObjects: 2, MinIdle: 1, BackoffInitial: time.Second, BackoffMax: time.Second,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	// The factory fails from the start: the pool's first refill, which New
	// starts, fails (set after New, the refill could succeed first and no
	// refill would be needed again).
	h := newHarnessOf(t, cfg, func(f *fakeFactory) Factory[*fakeObj] {
		f.createErr = errors.New("connection refused")
		return factoryOf[*fakeObj](f)
	})
	waitUntil(t, "the refill failed", func() bool { return len(linesAt(log, "WARN")) > 0 || h.p.Stats().CreateFailures > 0 })
	waitUntil(t, "its line", func() bool { return len(linesAt(log, "WARN")) == 1 })
	if w := linesAt(log, "WARN"); !strings.Contains(w[0], `msg="create failed"`) {
		t.Fatalf("warn lines %q; want the refill's failure", w)
	}
}
