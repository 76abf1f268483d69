package dbclass

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

func sleepQuery(s *servers.Server) string {
	if s.Kind == servers.KindPostgres {
		return "SELECT pg_sleep(30)"
	}
	return "SELECT SLEEP(30)"
}

// waitRunning waits until the server runs query in some session.
func waitRunning(t *testing.T, ctx context.Context, s *servers.Server, monitor *sql.DB, query string) {
	t.Helper()
	q := "SELECT COUNT(*) FROM pg_stat_activity WHERE query = $1 AND state = 'active'"
	if s.Kind == servers.KindMariaDB {
		q = "SELECT COUNT(*) FROM information_schema.processlist WHERE info = ?"
	}
	servers.WaitFor(t, ctx, "the server to run "+query, func() (bool, error) {
		var n int
		err := monitor.QueryRowContext(ctx, q, query).Scan(&n)
		return n > 0, err
	})
}

// stopSleepers ends the sleeps a test left running on MariaDB, which keeps
// running a statement whose client went away.
func stopSleepers(t *testing.T, s *servers.Server, monitor *sql.DB) {
	if s.Kind != servers.KindMariaDB {
		return
	}
	t.Cleanup(func() {
		ctx := context.Background()
		rows, err := monitor.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE info = ?", sleepQuery(s))
		if err != nil {
			return
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if rows.Scan(&id) == nil {
				ids = append(ids, id)
			}
		}
		rows.Close()
		for _, id := range ids {
			monitor.ExecContext(ctx, "KILL QUERY ?", id)
		}
	})
}

// runUntil runs query on c in the background, waits until the server runs
// it, calls stop, and returns the statement's error.
func runUntil(t *testing.T, ctx, stmtCtx context.Context, s *servers.Server, c *sql.Conn, stop func()) error {
	t.Helper()
	monitor := serverDB(t, s)
	stopSleepers(t, s, monitor)
	done := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(stmtCtx, sleepQuery(s))
		done <- err
	}()
	waitRunning(t, ctx, s, monitor, sleepQuery(s))
	stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatalf("the statement did not end: %v", ctx.Err())
		return nil
	}
}

// TestCancelledQuery cancels the context of a running statement: the
// caller's own doing, never a breaker failure.
func TestCancelledQuery(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		stmtCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := runUntil(t, ctx, stmtCtx, s, servers.Pinned(t, ctx, serverDB(t, s)), cancel)
		v := expect(t, err, dbguard.ClassCaller, "")
		if !v.Canceled || v.IsFailure() || v.IsConnectRetryable() {
			t.Errorf("%v: want canceled, not a breaker failure, not retried", v)
		}
	})

	// With pgx's CancelRequestContextWatcherHandler, as respool's driver
	// plans to use it, the server stops the statement and answers 57014;
	// only the context tells the caller's cancel from a statement timeout.
	t.Run("pgx cancel request", func(t *testing.T) {
		ctx := ctxT(t)
		cfg, err := pgx.ParseConfig(pg.PgxDSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: testTimeout}
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		stmtCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := conn.Exec(stmtCtx, sleepQuery(pg))
			done <- err
		}()
		waitRunning(t, ctx, pg, serverDB(t, pg), sleepQuery(pg))
		cancel()
		err = <-done
		expect(t, err, dbguard.ClassOther, "57014") // alone, it looks like a statement timeout
		if got, want := dbguard.ClassifyContext(stmtCtx, err), (dbguard.Classification{Class: dbguard.ClassCaller, Code: "57014", Canceled: true}); got != want {
			t.Errorf("ClassifyContext = %v, want %v", got, want)
		}
		if err := conn.Ping(ctx); err != nil {
			t.Errorf("the connection did not survive the cancel: %v", err)
		}
	})
}

// TestStatementTimeout: the server's own statement timeout stops a
// statement; a breaker counts it.
func TestStatementTimeout(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		c := servers.Pinned(t, ctx, serverDB(t, s))
		setTimeout, code := "SET statement_timeout = '100ms'", "57014"
		if s.Kind == servers.KindMariaDB {
			setTimeout, code = "SET SESSION max_statement_time = 0.1", "1969"
		}
		servers.MustExec(t, ctx, c, setTimeout)
		var slept any // MariaDB sends 1969 after the result set header: read the row
		err := c.QueryRowContext(ctx, sleepQuery(s)).Scan(&slept)
		if v := expect(t, err, dbguard.ClassOther, code); !v.Timeout || !v.IsFailure() {
			t.Errorf("%v: want a timeout that counts for the breaker", v)
		}
	})
}

// manualDeadline is a context whose deadline passes when the test says so,
// with the statement known to be running at the server.
type manualDeadline struct {
	context.Context
	done chan struct{}
}

func (c *manualDeadline) Done() <-chan struct{} { return c.done }
func (c *manualDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestDeadlineUnderRunningStatement: the caller's deadline passes while
// the statement runs; the driver drops the connection, and whether the
// statement took effect is unknown.
func TestDeadlineUnderRunningStatement(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		deadline := &manualDeadline{Context: ctx, done: make(chan struct{})}
		err := runUntil(t, ctx, deadline, s, servers.Pinned(t, ctx, serverDB(t, s)), func() { close(deadline.done) })
		if v := expect(t, err, dbguard.ClassAmbiguous, ""); !v.Timeout || !v.IsFailure() || v.IsConnectRetryable() {
			t.Errorf("%v: want a timeout that counts for the breaker, never retried", v)
		}
	})
}
