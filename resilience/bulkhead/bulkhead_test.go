package bulkhead_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/bulkhead"
	"github.com/respool/respool/resilience/internal/testctx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	t   *testing.T
	ctx context.Context
	clk *clocktest.Clock
	b   *bulkhead.Bulkhead
}

func newFixture(t *testing.T, c bulkhead.Config) *fixture {
	f := &fixture{t: t, ctx: testctx.New(t), clk: clocktest.New(time.Time{})}
	c.Clock = f.clk
	b, err := bulkhead.New(c)
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	return f
}

// enter takes a slot now or fails the test.
func (f *fixture) enter() resilience.Permit {
	f.t.Helper()
	p, err := f.b.Enter(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// enterAsync starts an Enter and waits until it is queued (its MaxWait
// timer set): n is the number of waiters then.
func (f *fixture) enterAsync(ctx context.Context, n int) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := f.b.Enter(ctx)
		ch <- err
	}()
	if err := f.clk.WaitTimers(f.ctx, n); err != nil {
		f.t.Fatal(err)
	}
	return ch
}

func TestRejectsPastMaxConcurrent(t *testing.T) {
	f := newFixture(t, bulkhead.Config{MaxConcurrent: 2})
	p1, p2 := f.enter(), f.enter()
	_, err := f.b.Enter(f.ctx)
	if !errors.Is(err, bulkhead.ErrFull) || !errors.Is(err, resilience.ErrRejected) {
		t.Fatalf("third: %v; want ErrFull", err)
	}
	f.b.Exit(p1, nil)
	p3 := f.enter()
	f.b.Exit(p2, nil)
	f.b.Exit(p3, nil)
	if s := f.b.Stats(); s.InUse != 0 || s.Rejected != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestQueueFIFO: waiters get freed slots in arrival order.
func TestQueueFIFO(t *testing.T) {
	f := newFixture(t, bulkhead.Config{MaxConcurrent: 1, QueueSize: 2})
	p := f.enter()
	first := f.enterAsync(f.ctx, 1)
	second := f.enterAsync(f.ctx, 2)
	if _, err := f.b.Enter(f.ctx); !errors.Is(err, bulkhead.ErrFull) {
		t.Fatalf("past the queue: %v; want ErrFull", err)
	}
	f.b.Exit(p, nil)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		t.Fatalf("second got a slot held by first: %v", err)
	default:
	}
	f.b.Exit(resilience.Permit{}, nil) // first ends
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if s := f.b.Stats(); s.InUse != 1 || s.Waiting != 0 || s.Queued != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestQueueTimeoutAndCancel(t *testing.T) {
	f := newFixture(t, bulkhead.Config{MaxConcurrent: 1, QueueSize: 2, MaxWait: time.Second})
	p := f.enter()
	timesOut := f.enterAsync(f.ctx, 1)
	ctx, cancel := context.WithCancel(f.ctx)
	cancelled := f.enterAsync(ctx, 2)
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	f.clk.Advance(time.Second)
	if err := <-timesOut; !errors.Is(err, bulkhead.ErrFull) {
		t.Fatalf("timed out: %v; want ErrFull", err)
	}
	f.b.Exit(p, nil)
	if s := f.b.Stats(); s.InUse != 0 || s.Waiting != 0 || s.TimedOut != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestNeverMoreThanMaxConcurrent hammers a bulkhead from many goroutines
// and counts the calls inside it.
func TestNeverMoreThanMaxConcurrent(t *testing.T) {
	b, err := bulkhead.New(bulkhead.Config{MaxConcurrent: 3, QueueSize: 100, MaxWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var inside, peak atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				p, err := b.Enter(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				inside.Add(-1)
				b.Exit(p, nil)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 3 || b.Stats().InUse != 0 {
		t.Fatalf("peak %d, in use %d; want at most 3, then 0", peak.Load(), b.Stats().InUse)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for field, c := range map[string]bulkhead.Config{
		"MaxConcurrent": {MaxConcurrent: -1},
		"QueueSize":     {QueueSize: -1},
		"MaxWait":       {MaxWait: -1},
	} {
		_, err := bulkhead.New(c)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("error %v; want a ConfigError on %s", err, field)
		}
	}
}
