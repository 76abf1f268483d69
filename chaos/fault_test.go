package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/clock/clocktest"
)

func TestEveryNthCall(t *testing.T) {
	c, dsn := newFake(t, Config{Faults: []Fault{{Kind: KindError, Err: PgError("40001"), Every: 3}}})
	cn := connect(t, c)
	ctx := ctxT(t)
	var failed []int
	for i := 1; i <= 9; i++ {
		if err := exec(ctx, cn); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
				t.Fatalf("call %d: %v, want a PgError 40001", i, err)
			}
			failed = append(failed, i)
		}
	}
	if !slices.Equal(failed, []int{3, 6, 9}) {
		t.Errorf("calls failed: %v, want [3 6 9]", failed)
	}
	if n := len(fakeCalls(dsn)); n != 6 {
		t.Errorf("the driver saw %d calls, want the 6 not failed", n)
	}
	if s := c.Stats(); s.Faults["error"].Considered != 9 || s.Faults["error"].Injected != 3 {
		t.Errorf("Stats = %+v, want 9 considered, 3 injected", s)
	}
}

// hits returns the numbers of the calls, among n made one after another on
// a new Connector with seed and a 30% error rate, that failed.
func hits(t *testing.T, seed uint64, n int) []int {
	c, _ := newFake(t, Config{Seed: seed, Faults: []Fault{{Kind: KindError, Err: PgError("40001"), Rate: 0.3}}})
	cn := connect(t, c)
	ctx := ctxT(t)
	var out []int
	for i := 1; i <= n; i++ {
		if exec(ctx, cn) != nil {
			out = append(out, i)
		}
	}
	return out
}

func TestSameSeedSameFaults(t *testing.T) {
	const n = 1000
	first := hits(t, 42, n)
	if again := hits(t, 42, n); !slices.Equal(first, again) {
		t.Fatalf("seed 42 hit calls %v, then %v", first, again)
	}
	if other := hits(t, 43, n); slices.Equal(first, other) {
		t.Fatalf("seeds 42 and 43 hit the same calls %v", first)
	}
	// The rate holds: 300 expected, the standard deviation is 14.5.
	if len(first) < 250 || len(first) > 350 {
		t.Errorf("a 30%% rate hit %d of %d calls", len(first), n)
	}
}

// TestSameSeedConcurrent: the n-th call a Fault considers is hit or not by
// the seed alone, whichever goroutine makes it, so the number of hits of a
// run is the seed's.
func TestSameSeedConcurrent(t *testing.T) {
	run := func() (hit int64, seq []int64) {
		var mu sync.Mutex
		c, _ := newFake(t, Config{Seed: 7, Faults: []Fault{{Kind: KindDrop, Rate: 0.2}},
			OnFault: func(e Event) { mu.Lock(); seq = append(seq, e.N); mu.Unlock() }})
		ctx := ctxT(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				cn, err := c.Connect(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				defer func() { cn.Close() }()
				for range 100 {
					if exec(ctx, cn.(*conn)) != nil {
						// dropped: go on with a new connection
						cn.Close()
						if cn, err = c.Connect(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		slices.Sort(seq)
		return c.Stats().Faults["drop"].Injected, seq
	}
	n1, seq1 := run()
	n2, seq2 := run()
	if n1 != n2 || !slices.Equal(seq1, seq2) || n1 == 0 {
		t.Fatalf("runs with seed 7 dropped %d calls %v, then %d %v", n1, seq1, n2, seq2)
	}
}

func TestDuringWindows(t *testing.T) {
	clk := clocktest.New(time.Time{})
	c, _ := newFake(t, Config{Clock: clk, Faults: []Fault{{Kind: KindError, Err: MySQLError(1213),
		During: []Window{{From: 10 * time.Second, To: 20 * time.Second}, {From: time.Minute}}}}})
	cn := connect(t, c)
	ctx := ctxT(t)
	for _, step := range []struct {
		advance time.Duration
		fail    bool
	}{{0, false}, {10 * time.Second, true}, {9 * time.Second, true}, {time.Second, false}, {40 * time.Second, true}, {time.Hour, true}} {
		clk.Advance(step.advance)
		if err := exec(ctx, cn); (err != nil) != step.fail {
			t.Fatalf("at %v: err = %v, want failure %v", clk.Since(c.start), err, step.fail)
		}
	}
	if s := c.Stats(); s.Faults["error"].Considered != 4 {
		t.Errorf("considered %d calls, want the 4 in the windows", s.Faults["error"].Considered)
	}
}

func TestEnableDisable(t *testing.T) {
	c, _ := newFake(t, Config{Faults: []Fault{{Name: "deadlock", Kind: KindError, Err: PgError("40P01"), Off: true}}})
	cn := connect(t, c)
	ctx := ctxT(t)
	check := func(fail bool) {
		t.Helper()
		if err := exec(ctx, cn); (err != nil) != fail {
			t.Fatalf("err = %v, want failure %v", err, fail)
		}
	}
	check(false)
	if err := c.Enable("deadlock"); err != nil {
		t.Fatal(err)
	}
	check(true)
	if err := c.Disable("deadlock"); err != nil {
		t.Fatal(err)
	}
	check(false)
	if err := c.Enable("nope"); !errors.Is(err, ErrUnknownFault) {
		t.Errorf("Enable(nope) = %v, want ErrUnknownFault", err)
	}
	if s := c.Stats(); s.Faults["deadlock"].On || s.Faults["deadlock"].Considered != 1 || s.Faults["deadlock"].Injected != 1 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestLatencyWaitsOnClock: the call returns only once the test clock has
// passed the delay; the delay is the fixed part plus a jitter below Jitter.
func TestLatencyWaitsOnClock(t *testing.T) {
	clk := clocktest.New(time.Time{})
	var events []Event
	c, dsn := newFake(t, Config{Clock: clk, Faults: []Fault{{Kind: KindLatency, Latency: 100 * time.Millisecond,
		Jitter: 50 * time.Millisecond}}, OnFault: func(e Event) { events = append(events, e) }})
	cn := connect(t, c)
	ctx := ctxT(t)
	done := async(func() error { return exec(ctx, cn) })
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	next, _ := clk.Next()
	delay := next.Sub(clk.Now())
	if delay < 100*time.Millisecond || delay >= 150*time.Millisecond {
		t.Fatalf("delay %v, want in [100ms, 150ms)", delay)
	}
	clk.Advance(delay - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("the call returned (%v) before its delay passed", err)
	default:
	}
	if len(fakeCalls(dsn)) != 0 {
		t.Fatal("the call reached the driver before its delay passed")
	}
	clk.Advance(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Faults["latency"].Latency != delay || len(events) != 1 || events[0].Delay != delay {
		t.Errorf("Stats %+v, events %v; want the delay %v", s, events, delay)
	}
}

// TestLatencyEndsWithContext: a context that ends during the delay stops
// the wait and the call goes to the driver with its context ended.
func TestLatencyEndsWithContext(t *testing.T) {
	clk := clocktest.New(time.Time{})
	c, _ := newFake(t, Config{Clock: clk, Faults: []Fault{{Kind: KindLatency, Latency: time.Hour}}})
	cn := connect(t, c)
	ctx, cancel := context.WithCancel(ctxT(t))
	done := async(func() error { return query(ctx, cn) })
	if err := clk.WaitTimers(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if _, pending := clk.Next(); pending {
		t.Error("the delay's timer is still pending")
	}
}

// TestPrecedence: latencies add up, the first failing Fault ends the call,
// and later ones still count the call without hitting it.
func TestPrecedence(t *testing.T) {
	clk := clocktest.New(time.Time{})
	var events []string
	c, _ := newFake(t, Config{Clock: clk, OnFault: func(e Event) { events = append(events, eventText(e)) },
		Faults: []Fault{
			{Name: "slow", Kind: KindLatency, Latency: time.Second},
			{Name: "serialization", Kind: KindError, Err: PgError("40001")},
			{Name: "slower", Kind: KindLatency, Latency: 2 * time.Second},
			{Name: "dropped", Kind: KindDrop},
		}})
	cn := connect(t, c)
	ctx := ctxT(t)
	done := async(func() error { return exec(ctx, cn) })
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	var pgErr *pgconn.PgError
	if err := <-done; !errors.As(err, &pgErr) || pgErr.Code != "40001" {
		t.Fatalf("err = %v, want 40001", err)
	}
	want := []string{"slow exec #1 +1s", "serialization exec #1", "slower exec #1 +2s"}
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if s := c.Stats(); s.Faults["dropped"].Considered != 1 || s.Faults["dropped"].Injected != 0 || !cn.IsValid() {
		t.Errorf("the drop after the error: %+v; connection valid %v", s.Faults["dropped"], cn.IsValid())
	}
}

// eventText is e as the test reads it: FAULT OP #N, and +DELAY for a
// latency.
func eventText(e Event) string {
	s := fmt.Sprintf("%s %s #%d", e.Fault, e.Op, e.N)
	if e.Kind == KindLatency {
		s += " +" + e.Delay.String()
	}
	return s
}

func TestConfigValidate(t *testing.T) {
	ok := Fault{Kind: KindError, Err: PgError("40001")}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no driver", Config{}, `DriverName ""`},
		{"itself", Config{DriverName: "chaos"}, `DriverName "chaos"`},
		{"unregistered", Config{DriverName: "nope"}, `DriverName "nope": not registered`},
		{"no kind", Config{DriverName: fakeName, Faults: []Fault{{}}}, "Kind Kind(0)"},
		{"rate", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindDrop, Rate: 1.5}}}, "Rate 1.5"},
		{"every", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindDrop, Every: -1}}}, "Every -1"},
		{"no err", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindError}}}, "needs Err"},
		{"no latency", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindLatency}}}, "needs Latency"},
		{"refuse on exec", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindRefuse, On: OpExec}}}, "OpConnect only"},
		{"drop on connect", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindDrop, On: OpConnect}}}, "use KindRefuse"},
		{"window", Config{DriverName: fakeName, Faults: []Fault{{Kind: KindDrop, During: []Window{{From: 2, To: 1}}}}}, "window 2ns-1ns"},
		{"same names", Config{DriverName: fakeName, Faults: []Fault{ok, ok}}, `two faults are named "error"`},
		{"name", Config{DriverName: fakeName, Name: "a\nb"}, "control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewConnector(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidConfig saying %q", err, tc.want)
			}
		})
	}
}
