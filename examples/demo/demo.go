package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/pool"
)

// options configure a run; defaultOptions are the command's.
type options struct {
	DSN  string    // empty: embedded SQLite
	Out  io.Writer // where the demo writes
	Live bool      // a terminal: redraw a status line in place

	MaxConns int // respool_max_conns of the demo's pools
	MaxQueue int // respool_max_queue

	Workers      int           // the workload's concurrent callers
	WorkloadTime time.Duration // how long the workload runs
	RequestTime  time.Duration // each request's deadline
	Hold         time.Duration // how long a request holds its connection, at most
	Burst        int           // callers arriving at once in the queue-full step
	BurstHold    time.Duration // how long each served burst caller holds its connection
	LeakBound    time.Duration // how long the leak step waits for LEAK-DETECTED
	Faults       faultPlan     // the fault step's schedule
	Steps        []string      // the steps to run, by name (workload opens the pool the next two use); nil: all
	Tick         time.Duration // the status line's refresh
	PlainEvery   time.Duration // plain mode: at most one status line this often
}

func defaultOptions() options {
	return options{
		MaxConns:     4,
		MaxQueue:     8,
		Workers:      8,
		RequestTime:  2 * time.Second,
		WorkloadTime: 6 * time.Second,
		Hold:         8 * time.Millisecond,
		Burst:        40,
		BurstHold:    300 * time.Millisecond,
		LeakBound:    10 * time.Second,
		Faults:       defaultFaultPlan(),
		Tick:         100 * time.Millisecond,
		PlainEvery:   time.Second,
	}
}

// demo is one run's shared state.
type demo struct {
	opts   options
	d      *display
	logs   *logSink
	target *target
	checks []check

	db   *sql.DB            // the demo's pool (mainPool), from the first step on
	conn *respool.Connector // its Connector
}

// check is one thing the demo showed, and whether it happened.
type check struct {
	what string
	ok   bool
	note string
}

// expect records a check and prints it.
func (dm *demo) expect(ok bool, what, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	dm.checks = append(dm.checks, check{what: what, ok: ok, note: note})
	mark := "ok  "
	if !ok {
		mark = "FAIL"
	}
	dm.d.printf("  [%s] %s: %s", mark, what, note)
}

// run runs the demo's steps and returns an error naming every check that
// failed.
func run(ctx context.Context, opts options) error {
	start := time.Now()
	dm := &demo{opts: opts, d: newDisplay(opts.Out, opts.Live, opts.PlainEvery)}
	dm.logs = newLogSink(dm.d)
	// A pool opened by sql.Open logs through slog.Default, read when the
	// pool is made.
	prev := slog.Default()
	slog.SetDefault(slog.New(dm.logs))
	defer slog.SetDefault(prev)

	t, err := newTarget(opts.DSN)
	if err != nil {
		return err
	}
	dm.target = t
	defer func() {
		if err := t.cleanup(); err != nil {
			dm.d.printf("cleanup: %v", err)
		}
	}()
	defer func() {
		if dm.db != nil {
			_ = dm.db.Close()
		}
	}()
	dm.d.printf("respool demo on %s", t.what)
	dm.d.printf("pools of %d connections, at most %d callers waiting (respool_max_conns=%d, respool_max_queue=%d)",
		opts.MaxConns, opts.MaxQueue, opts.MaxConns, opts.MaxQueue)

	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"workload", dm.workload},
		{"queue full", dm.queueFull},
		{"leak", dm.leak},
		{"faults", dm.faults},
	}
	for _, s := range steps {
		if opts.Steps != nil && !slices.Contains(opts.Steps, s.name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("step %s: %w", s.name, err)
		}
	}

	dm.d.heading("Summary (%.1fs)", time.Since(start).Seconds())
	var failed []string
	for _, c := range dm.checks {
		mark := "ok  "
		if !c.ok {
			mark = "FAIL"
			failed = append(failed, c.what)
		}
		dm.d.printf("  [%s] %s", mark, c.what)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d checks failed: %s", len(failed), len(dm.checks), strings.Join(failed, "; "))
	}
	dm.d.printf("all %d checks passed", len(dm.checks))
	return nil
}

// open opens a respool pool by sql.Open and finds its Connector.
func (dm *demo) open(ctx context.Context, dsn string) (*sql.DB, *respool.Connector, error) {
	db, err := sql.Open("respool", dsn)
	if err != nil {
		return nil, nil, err
	}
	c, err := respool.ConnectorOf(db)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("ping: %w", err)
	}
	return db, c, nil
}

// poolKeys are the respool keys of a demo pool named name.
func (dm *demo) poolKeys(name string) []kv {
	return []kv{
		{"respool_name", name},
		{"respool_max_conns", fmt.Sprint(dm.opts.MaxConns)},
		{"respool_max_queue", fmt.Sprint(dm.opts.MaxQueue)},
		{"respool_leak_stack", "on"},
		// db.Close waits (up to this) for the pool to close, so that its
		// last events are logged before the demo moves on.
		{"respool_close_timeout", "5s"},
	}
}

// statusLine formats a pool's stats for the status line.
func statusLine(s pool.Stats) string {
	return fmt.Sprintf("conns %d/%d (idle %d, in use %d) waiting %d | takes %d, waited %d, wait p50 %s p99 %s | queue-full %d | leaks %d",
		s.Total, s.MaxObjects, s.Idle, s.InUse, s.Waiting, s.Takes, s.Waits,
		quantile(s.WaitHistogram, 0.5), quantile(s.WaitHistogram, 0.99), s.QueueFull, s.LeaksDetected)
}

// quantile formats a quantile of the acquire-wait histogram: an upper bound,
// or a lower bound in the last, unbounded bucket.
func quantile(h pool.Histogram, q float64) string {
	d, ok := h.Quantile(q)
	switch {
	case ok:
		return "≤" + d.String()
	case d > 0:
		return "≥" + d.String()
	}
	return "-"
}

// watch redraws the status line from stats every Tick until stop is
// closed, and once more, forced, when it is; the returned channel is closed
// when it is done.
func (dm *demo) watch(stop <-chan struct{}, stats func() string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(dm.opts.Tick)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				dm.d.setStatus(stats(), false)
			case <-stop:
				dm.d.setStatus(stats(), true)
				dm.d.endStatus()
				return
			}
		}
	}()
	return done
}

// loop runs fn(worker, i) over and over in each of workers goroutines, i
// counting each worker's calls, until d has passed (a call under way then
// finishes) or ctx ends.
func loop(ctx context.Context, workers int, d time.Duration, fn func(worker, i int)) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}()
	loopUntil(workers, done, fn)
}

// loopUntil runs fn(worker, i) over and over in each of workers
// goroutines, i counting each worker's calls, until done is closed (a call
// under way then finishes).
func loopUntil(workers int, done <-chan struct{}, fn func(worker, i int)) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				fn(w, i)
			}
		})
	}
	wg.Wait()
}

// firstError keeps the first error set; safe for concurrent use.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
