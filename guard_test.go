package respool

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

// This file tests the resilience wiring: the Connector's breaker fed by
// statements and connection attempts, the take it refuses while the
// circuit is open, and the errors callers see.

// smallBreaker opens for an hour once half of the last 4 calls failed.
var smallBreaker = dbguard.Config{Breaker: breaker.Config{WindowSize: 4, MinimumCalls: 4, OpenDelay: delay.Strategy{Kind: delay.Constant, Initial: time.Hour}}}

// TestCircuitOpensOnLostConnections checks that statements whose
// connection broke open the circuit, and that the next query then fails at
// once, without reaching a connection, with the breaker's rejection:
// errors.Is breaker.ErrOpen, a *resilience.RejectedError, with the
// half-open time.
// The window holds the connection attempt (a success) and three failed
// statements: three of four calls failed.
func TestCircuitOpensOnLostConnections(t *testing.T) {
	m := newMock(t)
	for range 3 {
		m.mock.ExpectQuery("SELECT 1").WillReturnError(io.ErrUnexpectedEOF)
	}
	db, c := openDB(t, Config{DriverName: "sqlmock", DSN: m.dsn, Pool: pool.Config{MaxObjects: 2}, Resilience: smallBreaker})
	ctx := context.Background()
	for range 3 {
		if _, err := queryInt(ctx, db, "SELECT 1"); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("query: %v; want the lost connection", err)
		}
	}
	_, err := queryInt(ctx, db, "SELECT 1")
	var rej *resilience.RejectedError
	if !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &rej) {
		t.Fatalf("query while open: %v; want the breaker's rejection", err)
	}
	if until := time.Until(rej.RetryAt); until < 59*time.Minute {
		t.Fatalf("RetryAt in %v; want the half-open time, an hour away", until)
	}
	m.met(t) // no fourth query reached the connection
	if r := c.ResilienceStats(); r.Breaker.State != breaker.Open || r.StatementFailures != 3 || r.Rejected == 0 {
		t.Fatalf("ResilienceStats %+v; want open, 3 statement failures, a rejection", r)
	}
	s := c.Stats()
	if s.Takes == 0 || s.Total != 1 {
		t.Fatalf("pool Takes %d, Total %d", s.Takes, s.Total)
	}
}

// TestCallerErrorsNeverOpen checks that the caller's own errors (here a
// syntax error) and driver.ErrBadConn, on which database/sql retries, do
// not count: the circuit stays closed and the retry still works.
func TestCallerErrorsNeverOpen(t *testing.T) {
	syntax := &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "syntax error at or near \"SELEC\""}
	m := newMock(t)
	for range 6 {
		m.mock.ExpectQuery("SELEC 1").WillReturnError(syntax)
	}
	m.mock.ExpectQuery("SELECT 1").WillReturnError(sqldriver.ErrBadConn)
	m.mock.ExpectQuery("SELECT 1").WillReturnError(sqldriver.ErrBadConn)
	m.expectInt("SELECT 1", 1)
	db, c := openDB(t, Config{DriverName: "sqlmock", DSN: m.dsn, Pool: pool.Config{MaxObjects: 1}, Resilience: smallBreaker})
	ctx := context.Background()
	for range 6 {
		var pgErr *pgconn.PgError
		if _, err := queryInt(ctx, db, "SELEC 1"); !errors.As(err, &pgErr) || pgErr != syntax {
			t.Fatalf("query: %v; want the server's syntax error itself", err)
		}
	}
	if n, err := queryInt(ctx, db, "SELECT 1"); err != nil || n != 1 {
		t.Fatalf("query after two bad connections = %d, %v; want database/sql's retry to succeed", n, err)
	}
	m.met(t)
	if s := c.ResilienceStats(); s.Breaker.State != breaker.Closed || s.StatementFailures != 0 || s.Breaker.Failures != 0 {
		t.Fatalf("Resilience %+v; want closed, no failure", s)
	}
}

// TestTakeFailedFastIsThePoolsError checks that a take failed fast while
// creations fail reaches the caller as the pool's *pool.CreateError, with
// the time of the pool's next attempt, and that errors.As still finds the
// real driver's error in it; the caller whose own attempt failed gets the
// driver's error itself.
func TestTakeFailedFastIsThePoolsError(t *testing.T) {
	want := &dialError{Addr: "db.example.com:5432"}
	rc := &refusingConnector{err: want}
	db, _ := openDB(t, Config{Connector: rc, Pool: pool.Config{BackoffInitial: time.Hour}})
	if _, err := db.ExecContext(context.Background(), "UPDATE t SET n = 1"); err != want {
		t.Fatalf("first exec: %v; want the driver's own error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := db.ExecContext(ctx, "UPDATE t SET n = 1")
	var ce *pool.CreateError
	var de *dialError
	if !errors.As(err, &ce) || !ce.FailedFast || !errors.As(err, &de) || de != want {
		t.Fatalf("exec while the pool backs off: %v; want a failed-fast *pool.CreateError of the driver's error", err)
	}
	if at, ok := resilience.RetryAfter(err); !ok || time.Until(at) < 30*time.Minute {
		t.Fatalf("RetryAfter %v, %v; want the pool's next attempt", at, ok)
	}
	if n := rc.calls.Load(); n != 1 {
		t.Fatalf("%d connection attempts; want 1", n)
	}
}

// TestRefusedConnectionsOpenTheCircuit checks the creation path in the
// driver: refused dials are retried, count for the breaker, and open it;
// the caller then sees the driver's error with breaker.ErrOpen, and the
// next caller the breaker's rejection, without an attempt. The pool's own
// creation backoff is off, so that the second caller's creation is tried.
func TestRefusedConnectionsOpenTheCircuit(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	rc := &refusingConnector{err: refused}
	cfg := smallBreaker
	cfg.Retry = retry.Config[struct{}]{Delay: delay.Strategy{Kind: delay.Constant, Initial: time.Millisecond}}
	db, c := openDB(t, Config{Connector: rc, Resilience: cfg, Pool: pool.Config{BackoffDisabled: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := db.ExecContext(ctx, "UPDATE t SET n = 1")
	var oe *net.OpError
	if !errors.As(err, &oe) || errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("first exec: %v; want the refusal, the circuit still closed", err)
	}
	if n := rc.calls.Load(); n != 3 {
		t.Fatalf("%d attempts; want 3 (the first creation and its two retries)", n)
	}
	_, err = db.ExecContext(ctx, "UPDATE t SET n = 1")
	if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("second exec: %v; want the refusal that opened the circuit", err)
	}
	attempts := rc.calls.Load()
	_, err = db.ExecContext(ctx, "UPDATE t SET n = 1")
	if !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, resilience.ErrRejected) || rc.calls.Load() != attempts {
		t.Fatalf("exec while open: %v after %d more attempts; want a rejection, none", err, rc.calls.Load()-attempts)
	}
	if s := c.ResilienceStats(); s.ConnectAttempts != uint64(attempts) || s.Retry.Retries == 0 {
		t.Fatalf("Resilience %+v", s)
	}
}

// TestBackPressureOnByDefault checks that the pool gets dbguard's
// back-pressure classifier unless it is turned off.
func TestBackPressureOnByDefault(t *testing.T) {
	m := newMock(t)
	c := newTestConnector(t, Config{DriverName: "sqlmock", DSN: m.dsn})
	if c.pool.Config().BackPressure == nil {
		t.Fatal("no BackPressure by default")
	}
	if d, ok := c.pool.Config().BackPressure(&pgconn.PgError{Code: "53300"}); !ok || d <= 0 {
		t.Fatalf("BackPressure(53300) = %v, %v", d, ok)
	}
	if s := c.ResilienceStats(); !s.BreakerOn || !s.PauseOn || s.ConnectRateOn {
		t.Fatalf("Resilience %+v; want the breaker and pause on, no rate limit", s)
	}
	off := newTestConnector(t, Config{DriverName: "sqlmock", DSN: m.dsn, BackPressureDisabled: true,
		Resilience: dbguard.Config{BreakerDisabled: true, PauseDisabled: true}})
	if off.pool.Config().BackPressure != nil {
		t.Fatal("BackPressure set with BackPressureDisabled")
	}
	if s := off.ResilienceStats(); s.BreakerOn || s.PauseOn {
		t.Fatalf("Resilience %+v; want the breaker and pause off", s)
	}
}
