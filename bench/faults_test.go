package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/puddle/v2"

	"github.com/respool/respool/pool"
)

// The fault scenarios: pools under overload and against a factory that
// always fails. They run in real time, one measured window per iteration
// (so -benchtime 1x is one window); ns/op is that window and means nothing
// else: read the metrics.
//
//   - BenchmarkOverload: closed-loop callers share a pool of 10 whose
//     objects are held for 200ms each, every call with a 1s deadline. ok/s
//     counts the calls whose hold completed before their deadline, out of
//     the 50 a second the pool can do; late/s those that got an object too
//     late to finish; failed/s the takes that failed. A caller whose take
//     failed makes its next call 1ms later (a closed loop with a think time
//     on failure only, so that callers failed fast do not spin). With 64
//     callers the pool is overloaded (FIFO would make each wait about 1.1s);
//     with 20 it is busy but not overloaded (a wait of about 200ms, so
//     every caller can be served in time, and none should fail).
//   - BenchmarkCreateFailing: the same 64 callers against a factory whose
//     every creation fails at once; attempts/s counts the creations tried,
//     lines/s respool's log lines. A caller whose take failed makes its
//     next call at once.
//
// They take seconds each, so they run only when -faults.scale is set:
//
//	go test -run '^$' -bench 'Overload|CreateFailing' -benchtime 1x -count 5 . -faults.scale=1
//
// A scale below 1 shrinks the scenario's durations (0.25: 50ms holds,
// 250ms deadlines) for a quicker run, with rates reported at full scale;
// it does not shrink the pools' own delays (respool's creation backoff), so
// BenchmarkCreateFailing means something only at 1.
var faultScale = flag.Float64("faults.scale", 0, "time scale of the fault benchmarks (1: 200ms holds, 1s deadlines; 0: skip them)")

const (
	faultPoolSize = 10
	faultCallers  = 64
	faultHold     = 200 * time.Millisecond
	faultDeadline = time.Second
	faultWarmUp   = 2 * time.Second // before the measured window, at full scale
	faultWindow   = 2 * time.Second // one iteration, at full scale
	faultThink    = time.Millisecond
)

// scaled returns d at the benchmarks' time scale.
func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * *faultScale) }

// overloadKinds are the pools of BenchmarkOverload: respool under each
// overload policy, then puddle and database/sql.
var overloadKinds = []poolKind{
	{"respool-deadline", func(size int) (benchPool, error) { return newFaultRespool(size, pool.OverloadDeadline) }},
	{"respool-codel", func(size int) (benchPool, error) { return newFaultRespool(size, pool.OverloadCoDel) }},
	{"respool-fifo", func(size int) (benchPool, error) { return newFaultRespool(size, pool.OverloadFIFO) }},
	{"puddle", newPuddle},
	{"sql", newSQL},
}

// faultRespool is respool as the fault scenarios use it: leak tracking
// off, the overload policy given, and a close that does not mind the
// failures the scenario causes.
type faultRespool struct{ respoolPool }

func newFaultRespool(size int, policy pool.OverloadPolicy) (benchPool, error) {
	p, err := pool.New[*object](
		pool.Factory[*object]{Create: newObject()},
		pool.Config{MaxObjects: size, MaxQueueSize: queueSize, LeakTrackingDisabled: true,
			Overload: policy, Logger: slog.New(slog.DiscardHandler)},
	)
	if err != nil {
		return nil, err
	}
	return &faultRespool{respoolPool{p: p}}, nil
}

func (r *faultRespool) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return r.p.Close(ctx)
}

// BenchmarkOverload measures goodput under overload (see the top of the
// file).
func BenchmarkOverload(b *testing.B) {
	skipFaults(b)
	for _, callers := range []int{faultCallers, 20} {
		for _, k := range overloadKinds {
			b.Run(fmt.Sprintf("callers=%d/pool=%s", callers, k.name), func(b *testing.B) {
				p := openPool(b, k, faultPoolSize)
				if err := warm(context.Background(), p, faultPoolSize); err != nil {
					b.Fatal(err)
				}
				c := overload(p, callers, scaled(faultHold), scaled(faultDeadline), scaled(faultWarmUp), time.Duration(b.N)*scaled(faultWindow), b.ResetTimer)
				perSecond := func(n int64) float64 { return float64(n) / (float64(b.N) * faultWindow.Seconds()) }
				b.ReportMetric(perSecond(c.ok), "ok/s")
				b.ReportMetric(perSecond(c.late), "late/s")
				b.ReportMetric(perSecond(c.failed), "failed/s")
			})
		}
	}
}

// overloadCounts are the outcomes of calls that ended in the measured
// window.
type overloadCounts struct{ ok, late, failed int64 }

// overload runs callers closed-loop calls on p for warmUp, then measures
// the outcomes of the calls that end in the next window.
func overload(p benchPool, callers int, hold, deadline, warmUp, window time.Duration, started func()) overloadCounts {
	var c overloadCounts
	closedLoop(p, callers, warmUp, window, func(w worker, measuring func() bool) {
		count := func(n *int64) {
			if measuring() {
				atomic.AddInt64(n, 1)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := w.take(ctx); err != nil {
			count(&c.failed)
			time.Sleep(scaled(faultThink))
			return
		}
		t := time.NewTimer(hold)
		select {
		case <-t.C:
			count(&c.ok)
		case <-ctx.Done(): // the work is cut short by the deadline
			t.Stop()
			count(&c.late)
		}
		_ = w.giveBack()
	}, func(start bool) {
		if start && started != nil {
			started()
		}
	})
	return c
}

// closedLoop runs callers goroutines, each making calls with a worker of p,
// one after the other, for warmUp and then window. measuring reports
// whether the window is on; edge is called as it starts (true) and ends
// (false).
func closedLoop(p benchPool, callers int, warmUp, window time.Duration, call func(w worker, measuring func() bool), edge func(start bool)) {
	var (
		measuring atomic.Bool
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	for range callers {
		w := p.worker()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				call(w, measuring.Load)
			}
		}()
	}
	time.Sleep(warmUp)
	edge(true)
	measuring.Store(true)
	time.Sleep(window)
	measuring.Store(false)
	edge(false)
	close(stop)
	wg.Wait()
}

// errRefused is what the failing factories return.
var errRefused = errors.New("connection refused")

// failingKinds are the pools of BenchmarkCreateFailing, each with a factory
// that counts its attempts and always fails.
var failingKinds = []struct {
	name string
	new  func(size int, attempts *atomic.Int64, lines *atomic.Int64) (benchPool, error)
}{
	{"respool", newFailingRespool},
	{"puddle", func(size int, attempts, _ *atomic.Int64) (benchPool, error) {
		p, err := puddle.NewPool(&puddle.Config[*object]{
			Constructor: func(context.Context) (*object, error) { attempts.Add(1); return nil, errRefused },
			Destructor:  func(*object) {},
			MaxSize:     int32(size),
		})
		return &puddlePool{p: p}, err
	}},
	{"sql", func(size int, attempts, _ *atomic.Int64) (benchPool, error) {
		db := sql.OpenDB(failingConnector{attempts})
		db.SetMaxOpenConns(size)
		return &sqlPool{db: db}, nil
	}},
}

func newFailingRespool(size int, attempts, lines *atomic.Int64) (benchPool, error) {
	p, err := pool.New[*object](
		pool.Factory[*object]{Create: func(context.Context) (*object, error) { attempts.Add(1); return nil, errRefused }},
		pool.Config{MaxObjects: size, MaxQueueSize: queueSize, LeakTrackingDisabled: true,
			Logger: slog.New(countingHandler{lines})},
	)
	if err != nil {
		return nil, err
	}
	return &faultRespool{respoolPool{p: p}}, nil
}

// failingConnector is a driver.Connector whose every Connect fails.
type failingConnector struct{ attempts *atomic.Int64 }

func (c failingConnector) Connect(context.Context) (driver.Conn, error) {
	c.attempts.Add(1)
	return nil, errRefused
}
func (failingConnector) Driver() driver.Driver { return fakeDriver{} }

// countingHandler counts the log lines of level Info and above.
type countingHandler struct{ n *atomic.Int64 }

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h countingHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h countingHandler) WithGroup(string) slog.Handler                { return h }

// BenchmarkCreateFailing measures how hard each pool hammers a factory that
// always fails (see the top of the file).
func BenchmarkCreateFailing(b *testing.B) {
	skipFaults(b)
	for _, k := range failingKinds {
		b.Run("pool="+k.name, func(b *testing.B) {
			var attempts, lines atomic.Int64
			p, err := k.new(faultPoolSize, &attempts, &lines)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := p.close(); err != nil {
					b.Error(err)
				}
			}()
			window := time.Duration(b.N) * scaled(faultWindow)
			c := failing(p, faultCallers, scaled(faultDeadline), scaled(faultWarmUp), window, &attempts, &lines, b.ResetTimer)
			perSecond := func(n int64) float64 { return float64(n) / (float64(b.N) * faultWindow.Seconds()) }
			b.ReportMetric(perSecond(c.attempts), "attempts/s")
			b.ReportMetric(perSecond(c.lines), "lines/s")
			b.ReportMetric(perSecond(c.failed), "failed/s")
		})
	}
}

// failingCounts are what happened in the measured window.
type failingCounts struct{ attempts, lines, failed int64 }

// failing runs callers closed-loop takes on p, each with deadline, for
// warmUp and then window, and counts the attempts, log lines and failed
// takes of the window.
func failing(p benchPool, callers int, deadline, warmUp, window time.Duration, attempts, lines *atomic.Int64, started func()) failingCounts {
	var c failingCounts
	var failed atomic.Int64
	closedLoop(p, callers, warmUp, window, func(w worker, measuring func() bool) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := w.take(ctx); err == nil {
			panic("take succeeded against a failing factory")
		}
		if measuring() {
			failed.Add(1)
		}
	}, func(start bool) {
		if start {
			if started != nil {
				started()
			}
			c.attempts, c.lines = -attempts.Load(), -lines.Load()
			return
		}
		c.attempts += attempts.Load()
		c.lines += lines.Load()
	})
	c.failed = failed.Load()
	return c
}

// skipFaults skips a fault benchmark unless -faults.scale is set.
func skipFaults(b *testing.B) {
	if *faultScale <= 0 {
		b.Skip("fault benchmarks run only with -faults.scale (1 for the full scenario)")
	}
}

// TestFaultScenarios runs the fault scenarios briefly against every pool,
// so that go test (and -race) exercises their code without -bench.
func TestFaultScenarios(t *testing.T) {
	old := *faultScale
	*faultScale = 0.02 // 4ms holds, 20ms deadlines
	defer func() { *faultScale = old }()
	for _, k := range overloadKinds {
		t.Run("overload/pool="+k.name, func(t *testing.T) {
			p := openPool(t, k, faultPoolSize)
			c := overload(p, faultCallers, scaled(faultHold), scaled(faultDeadline), scaled(faultWarmUp), scaled(faultWindow), nil)
			t.Logf("ok %d, late %d, failed %d", c.ok, c.late, c.failed)
		})
	}
	for _, k := range failingKinds {
		t.Run("create-failing/pool="+k.name, func(t *testing.T) {
			var attempts, lines atomic.Int64
			p, err := k.new(faultPoolSize, &attempts, &lines)
			if err != nil {
				t.Fatal(err)
			}
			c := failing(p, faultCallers, scaled(faultDeadline), scaled(faultWarmUp), scaled(faultWindow), &attempts, &lines, nil)
			if err := p.close(); err != nil {
				t.Error(err)
			}
			if c.failed == 0 {
				t.Error("no take failed")
			}
			t.Logf("attempts %d, lines %d, failed takes %d", c.attempts, c.lines, c.failed)
		})
	}
}
