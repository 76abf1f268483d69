package sqldriver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

//go:noinline
func takeAndLoseConn(t *testing.T, p *pool.Pool[*pgx.Conn]) {
	h, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := h.Value().QueryRow(context.Background(), "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

func TestNativePgxConnectionsWithLeakDetection(t *testing.T) {
	ctx := ctxT(t)
	cc, err := pgx.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	f := respool.PgxFactory(cc)
	h := newSignalHandler("LEAK-DETECTED")
	p, err := pool.New[*pgx.Conn](f, pool.Config{MaxObjects: 1, LeakCaptureStack: true, Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	defer closePool(t, p)

	// A connection left inside a transaction is not handed out again.
	c, err := p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Value().Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := c.GiveBack(); err != nil {
		t.Fatal(err)
	}
	c, err = p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Value().PgConn().TxStatus(); st != 'I' {
		t.Fatalf("got a connection in transaction status %q", st)
	}
	if err := c.GiveBack(); err != nil {
		t.Fatal(err)
	}

	// A lost handle is found by the garbage collector and its slot freed.
	takeAndLoseConn(t, p)
	for p.Stats().LeaksDetected == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the lost connection was never reported")
		default:
		}
		runtime.GC()
		runtime.Gosched()
	}
	<-h.seen
	c, err = p.Take(ctx) // MaxObjects 1: only possible once the slot is freed
	if err != nil {
		t.Fatalf("Take after the leak: %v", err)
	}
	if err := c.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Destroys.Invalid != 1 || st.Destroys.Leaked != 1 {
		t.Fatalf("destroys %v: want one for the open transaction, one for the leak", st.Destroys)
	}
}

// TestNativePgxThroughTheGuard checks that native pgx connections get the
// driver's creation path: respool.PgxFactory wrapped by dbguard.Factory. While the
// server refuses connections (a dial hook refuses them), a creation is
// retried, the attempts open the circuit, and then takes fail at once with
// a *pool.CreateError matching breaker.ErrOpen and carrying the half-open
// time, with no attempt; once the server is back, the first take after that
// time is the probe, and succeeds.
func TestNativePgxThroughTheGuard(t *testing.T) {
	ctx := ctxT(t)
	cc, err := pgx.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	f := respool.PgxFactory(cc)
	var down atomic.Bool
	var dials atomic.Int64
	dial := cc.DialFunc
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		if down.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return dial(ctx, network, addr)
	}
	g, err := dbguard.New(dbguard.Config{Retry: retry.Config[struct{}]{Delay: delay.Strategy{Kind: delay.Constant, Initial: time.Millisecond}},
		Breaker: breaker.Config{WindowSize: 4, MinimumCalls: 4, OpenDelay: delay.Strategy{Kind: delay.Constant, Initial: 200 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	p, err := pool.New(dbguard.Factory[*pgx.Conn](g, f),
		pool.Config{MaxObjects: 4, BackPressure: dbguard.BackPressure, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer closePool(t, p)

	// Down: the first creation makes 3 attempts; the pool's next, after its
	// backoff (which its failed-fast error names), opens the circuit.
	down.Store(true)
	_, err = p.Take(ctx)
	var oe *net.OpError
	if !errors.As(err, &oe) || errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("first Take: %v; want the refusal, the circuit still closed", err)
	}
	if n := dials.Load(); n != 3 {
		t.Fatalf("%d dials; want 3 (a creation and its two retries)", n)
	}
	for !errors.Is(err, breaker.ErrOpen) {
		var ce *pool.CreateError
		if !errors.As(err, &ce) {
			t.Fatalf("Take: %v; want a *pool.CreateError", err)
		}
		if ce.FailedFast {
			waitUntil(t, ctx, ce.RetryAfter())
		}
		_, err = p.Take(ctx)
	}
	attempts := dials.Load()
	var ce *pool.CreateError
	for range 5 {
		start := time.Now()
		_, err = p.Take(ctx)
		if !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &oe) {
			t.Fatalf("Take while open: %v; want a failed-fast *pool.CreateError of the refusal that opened the circuit", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Take while open took %v; want it at once", d)
		}
	}
	if n := dials.Load(); n != attempts {
		t.Fatalf("%d dials while open; want none", n-attempts)
	}
	if _, err := g.Admit(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Admit while open: %v; want breaker.ErrOpen", err)
	}

	// Back: the first take after the half-open time is the probe.
	down.Store(false)
	waitUntil(t, ctx, ce.RetryAfter())
	h, err := p.Take(ctx)
	if err != nil {
		t.Fatalf("Take after the half-open time: %v; want the probe's connection", err)
	}
	var n int
	if err := h.Value().QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1 = %d, %v", n, err)
	}
	if err := h.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if s := g.Stats(); s.Breaker.State != breaker.Closed || s.ConnectAttempts != uint64(dials.Load()) {
		t.Fatalf("guard %+v; want the circuit closed and every dial counted", s)
	}
}

// closePool closes p, waiting at most 10 s for its connections.
func closePool(t *testing.T, p *pool.Pool[*pgx.Conn]) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Error(err)
	}
}

// waitUntil waits for the time at, which an error named (a pool's next
// attempt, a circuit's half-open time), within ctx.
func waitUntil(t *testing.T, ctx context.Context, at time.Time) {
	t.Helper()
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", at.Format("15:04:05.000"), ctx.Err())
	}
}
