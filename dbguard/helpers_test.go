package dbguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// The errors a driver returns, as Classify judges them.
var (
	// errRefused is a dial refused: connection-level, nothing sent.
	errRefused error = &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "x"}}
	// errLost is a connection lost after the statement was sent: ambiguous.
	errLost = io.ErrUnexpectedEOF
	// errFull is PostgreSQL's "too many connections": back-pressure.
	errFull = &pgconn.PgError{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"}
	// errSyntax is the caller's own error.
	errSyntax = &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "syntax error"}
	// errPassword is the caller's own error on a connection attempt.
	errPassword = &pgconn.PgError{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"}
)

func init() {
	errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

// fixture is a Guard on a virtual clock, and a connection factory whose
// attempts fail with the errors it is told.
type fixture struct {
	t   *testing.T
	clk *clocktest.Clock
	g   *dbguard.Guard

	mu      sync.Mutex
	errs    []error // the outcomes of the next attempts, in order; nil: success
	made    int     // attempts that reached the factory
	events  []resilience.Event
	changed chan struct{} // closed and replaced whenever events is added to
}

func newFixture(t *testing.T, c dbguard.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clocktest.New(time.Time{}), changed: make(chan struct{})}
	c.Clock = f.clk
	c.Listener = func(e resilience.Event) {
		f.mu.Lock()
		f.events = append(f.events, e)
		close(f.changed)
		f.changed = make(chan struct{})
		f.mu.Unlock()
	}
	g, err := dbguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	f.g = g
	return f
}

// awaitEvent waits until mechanism has emitted n events of kind k in all,
// or ctx ends.
func (f *fixture) awaitEvent(ctx context.Context, mechanism string, k resilience.EventKind, n int) error {
	for {
		f.mu.Lock()
		seen, changed := 0, f.changed
		for _, e := range f.events {
			if e.Mechanism == mechanism && e.Kind == k {
				seen++
			}
		}
		f.mu.Unlock()
		if seen >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%d %s %v events; want %d: %w", seen, mechanism, k, n, ctx.Err())
		}
	}
}

// fail makes the next attempts fail with errs, in order.
func (f *fixture) fail(errs ...error) {
	f.mu.Lock()
	f.errs = append(f.errs, errs...)
	f.mu.Unlock()
}

// create is the factory's Create: it fails with the next error told, or
// makes a connection, numbered.
func (f *fixture) create(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.made++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		if err != nil {
			return 0, err
		}
	}
	return f.made, nil
}

func (f *fixture) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.made
}

// connect makes a connection through the guard (dbguard.Factory) with f's
// create.
func (f *fixture) connect(ctx context.Context) (int, error) {
	return guarded(f.g, f.create)(ctx)
}

// guarded is create made through g's creation path.
func guarded[T any](g *dbguard.Guard, create func(context.Context) (T, error)) func(context.Context) (T, error) {
	return dbguard.Factory(g, pool.Factory[T]{Create: create}).Create
}

// connectStepping runs connect in a goroutine and, steps times, waits for
// a timer (a retry's delay) and moves the virtual clock to it; then it
// returns its outcome.
func (f *fixture) connectStepping(steps int) (int, error) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	var n int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err = f.connect(ctx)
	}()
	for range steps {
		if werr := f.clk.WaitTimers(ctx, 1); werr != nil {
			f.t.Fatalf("no retry delay: %v", werr)
		}
		next, _ := f.clk.Next()
		f.clk.Advance(next.Sub(f.clk.Now()))
	}
	<-done
	return n, err
}

// testBound bounds every wait of a test.
const testBound = 10 * time.Second

// statement runs a statement through Enter and Exit with outcome err, and
// returns the rejection, if any.
func (f *fixture) statement(ctx context.Context, err error) error {
	p, rej := f.g.Enter(ctx)
	if rej != nil {
		return rej
	}
	f.g.Exit(ctx, p, err)
	return nil
}

// statements runs n statements with outcome err, failing the test on a
// rejection.
func (f *fixture) statements(n int, err error) {
	f.t.Helper()
	for i := range n {
		if rej := f.statement(context.Background(), err); rej != nil {
			f.t.Fatalf("statement %d of %d rejected: %v", i+1, n, rej)
		}
	}
}

func isRejection(err error, reason error) bool {
	return errors.Is(err, reason) && errors.Is(err, resilience.ErrRejected)
}
