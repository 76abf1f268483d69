package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// appSessions returns a function that counts the sessions of application_name
// app at PostgreSQL, through a plain connection of the test's.
func appSessions(t *testing.T, ctx context.Context, app string) func() int {
	mon := monitor(t, pg)
	return func() int {
		t.Helper()
		var n int
		if err := mon.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// waitSessions waits until count() is want and returns how long it took.
func waitSessions(t *testing.T, ctx context.Context, what string, count func() int, want int) time.Duration {
	t.Helper()
	start := time.Now()
	servers.WaitFor(t, ctx, fmt.Sprintf("%s: %d sessions", what, want), func() (bool, error) { return count() == want, nil })
	return time.Since(start)
}

// appName is an application_name of this test's own.
func appName(pool string) string { return fmt.Sprintf("%s-reset-%d", pool, time.Now().UnixNano()) }

// Connector.Reset closes the idle sessions at the server at once and those
// in use when they are given back, a transaction under way included, with
// no query failing; pgxpool's Reset beside it. Then Resize: down to 2
// (6 concurrent queries never open more than 2 sessions), up with MinIdle 3
// (3 sessions opened idle at once), down to 1 (the idle ones closed).
func TestResetAndResizeAtTheServer(t *testing.T) {
	ctx := ctxT(t)
	app := appName("respool")
	count := appSessions(t, ctx, app)
	db, c, err := respool.OpenDB(withKeys(pg, "application_name="+app+"&respool_max_conns=6&respool_min_idle=0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	conns := make([]*sql.Conn, 4)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := conns[i].ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := conns[0].BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "CREATE TEMP TABLE reset_probe (n int)"); err != nil {
		t.Fatal(err)
	}
	for _, cn := range conns[2:] {
		if err := cn.Close(); err != nil { // idle in the pool
			t.Fatal(err)
		}
	}
	if n := count(); n != 4 {
		t.Fatalf("%d sessions at the server before Reset, want 4", n)
	}
	c.Reset()
	idleGone := waitSessions(t, ctx, "respool: the idle ones closed", count, 2)
	// The sessions in use work on, the transaction to its end.
	if _, err := tx.ExecContext(ctx, "INSERT INTO reset_probe VALUES (1)"); err != nil {
		t.Fatalf("a transaction under way when Reset was called: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := conns[1].ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatalf("a connection in use when Reset was called: %v", err)
	}
	for _, cn := range conns[:2] {
		if err := cn.Close(); err != nil {
			t.Fatal(err)
		}
	}
	inUseGone := waitSessions(t, ctx, "respool: those in use closed once given back", count, 0)
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	// The server sees a session end before the pool has counted its
	// destroy (the count follows the close).
	servers.WaitFor(t, ctx, "4 connections closed as reset", func() (bool, error) { return c.Stats().Destroys.Reset == 4, nil })
	if s := c.Stats(); s.Destroys.Reset != 4 || count() != 1 {
		t.Fatalf("%d closed as reset, %d sessions after a query; want 4, 1", s.Destroys.Reset, count())
	}

	// Reset under load: no query fails.
	queries, failed := resetUnderLoad(ctx, db, c.Reset)
	if failed != "" {
		t.Fatalf("a query failed while the pool was reset: %s", failed)
	}

	pgxIdle, pgxInUse := pgxpoolReset(t, ctx)
	t.Logf("Reset, sessions at the server gone after: respool idle %v, in use %v after their give-back; pgxpool idle %v, in use %v; "+
		"respool under load: %d queries by 8 callers across 20 Resets, 0 failed, %d sessions closed as reset",
		idleGone.Round(time.Millisecond), inUseGone.Round(time.Millisecond),
		pgxIdle.Round(time.Millisecond), pgxInUse.Round(time.Millisecond), queries, c.Stats().Destroys.Reset)

	// Resize.
	if err := c.Resize(2, 0); err != nil {
		t.Fatal(err)
	}
	// The idle sessions beyond 2 left by the load are closed first.
	servers.WaitFor(t, ctx, "Resize(2, 0): at most 2 sessions", func() (bool, error) { return count() <= 2, nil })
	var most atomic.Int64
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := db.ExecContext(ctx, "SELECT pg_sleep(0.2)"); err != nil {
				t.Error(err)
			}
		}()
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(count()); n > most.Load() {
				most.Store(n)
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-sampled
	if m := most.Load(); m != 2 {
		t.Fatalf("at most %d sessions for 6 concurrent queries at size 2, want 2", m)
	}
	if err := c.Resize(6, 3); err != nil {
		t.Fatal(err)
	}
	grown := waitSessions(t, ctx, "Resize(6, 3): MinIdle refilled", count, 3)
	if err := c.Resize(1, 0); err != nil {
		t.Fatal(err)
	}
	shrunk := waitSessions(t, ctx, "Resize(1, 0): idle ones closed", count, 1)
	t.Logf("Resize: 6 concurrent queries at size 2 opened at most %d sessions; Resize(6, 3) had 3 idle sessions at the server after %v; Resize(1, 0) 1 after %v",
		most.Load(), grown.Round(time.Millisecond), shrunk.Round(time.Millisecond))
}

// resetUnderLoad runs SELECT 1 from 8 callers while reset is called 20
// times, every 50 queries, and returns how many queries ran and the first error.
func resetUnderLoad(ctx context.Context, db *sql.DB, reset func()) (int64, string) {
	var n atomic.Int64
	var failed atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
					failed.CompareAndSwap(nil, err.Error())
					return
				}
				n.Add(1)
			}
		}()
	}
	for range 20 { // a Reset every 50 queries
		for target := n.Load() + 50; n.Load() < target && failed.Load() == nil && ctx.Err() == nil; {
			runtime.Gosched()
		}
		reset()
	}
	close(stop)
	wg.Wait()
	msg, _ := failed.Load().(string)
	return n.Load(), msg
}

// pgxpoolReset runs the first part of TestResetAndResizeAtTheServer on a
// pgxpool: 4 connections, 2 given back, Reset; it returns how long until
// the idle sessions were gone at the server, and those in use after their
// release.
func pgxpoolReset(t *testing.T, ctx context.Context) (idle, inUse time.Duration) {
	app := appName("pgxpool")
	count := appSessions(t, ctx, app)
	cfg, err := pgxpool.ParseConfig(pg.DSN() + "&application_name=" + app)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 6, 0
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conns := make([]*pgxpool.Conn, 4)
	for i := range conns {
		if conns[i], err = p.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := conns[i].Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	conns[2].Release()
	conns[3].Release()
	if n := count(); n != 4 {
		t.Fatalf("pgxpool: %d sessions before Reset, want 4", n)
	}
	p.Reset()
	idle = waitSessions(t, ctx, "pgxpool: the idle ones closed", count, 2)
	for _, cn := range conns[:2] {
		if _, err := cn.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatalf("pgxpool: a connection in use when Reset was called: %v", err)
		}
		cn.Release()
	}
	inUse = waitSessions(t, ctx, "pgxpool: those in use closed once released", count, 0)
	return idle, inUse
}

// TestReadOnlyRefusalClosesIdleSessionsAtOnce (issue 16 item 1): a write
// refused by a server demoted for everyone closes the pool's idle
// connections to it at once, not when each is next taken: with 4
// connections idle and one write refused in a transaction (which nothing
// runs again, so no other connection is taken), the server lists none of
// the pool's sessions within 5s.
func TestReadOnlyRefusalClosesIdleSessionsAtOnce(t *testing.T) {
	ctx := ctxT(t)
	const poolSize = 4
	app := appName("respool-demoted")
	count := appSessions(t, ctx, app)
	servers.MustExec(t, ctx, monitor(t, pg), "DROP TABLE IF EXISTS respool_reset_demoted", "CREATE TABLE respool_reset_demoted (n int)")
	db, c := openDB(t, withKeys(pg, fmt.Sprintf("application_name=%s&respool_max_conns=%d", app, poolSize)))
	warm(t, ctx, db, poolSize)
	if n := count(); n != poolSize {
		t.Fatalf("%d sessions after warming, want %d", n, poolSize)
	}
	demote(t, ctx, pg)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO respool_reset_demoted VALUES (1)")
	if readOnlyCode(err) == "" {
		t.Fatalf("a write in a transaction on the demoted server: %v; want its refusal", err)
	}
	if err := tx.Rollback(); err != nil { // the server is asked now: read-only for everyone
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	gone := waitSessions(t, wctx, "the demoted server's idle sessions closed", count, 0)
	servers.WaitFor(t, wctx, "the pool to count them", func() (bool, error) { return c.Stats().Destroys.Reset >= poolSize-1, nil })
	t.Logf("after the refusal, the pool's %d sessions at the demoted server closed within %v; %d closed as reset",
		poolSize, gone.Round(time.Millisecond), c.Stats().Destroys.Reset)
}
