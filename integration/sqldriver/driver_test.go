package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

func openDB(t *testing.T, dsn string) (*sql.DB, *respool.Connector) {
	t.Helper()
	db, c, err := respool.OpenDB(dsn)
	if err != nil {
		t.Fatalf("OpenDB: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("db.Close: %v", err)
		}
	})
	return db, c
}

func TestQueriesTransactionsAndPreparedStatements(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, err := sql.Open("respool", withKeys(s, "respool_max_conns=3"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		table := "respool_t_" + s.Kind
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY, name VARCHAR(50))"); err != nil {
			t.Fatal(err)
		}
		insert := "INSERT INTO " + table + " VALUES (" + placeholder(s, 1) + ", " + placeholder(s, 2) + ")"

		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, insert, 1, "committed"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, insert, 2, "rolled back"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}

		stmt, err := db.PrepareContext(ctx, "SELECT name FROM "+table+" WHERE id = "+placeholder(s, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		var name string
		if err := stmt.QueryRowContext(ctx, 1).Scan(&name); err != nil || name != "committed" {
			t.Fatalf("prepared query = %q, %v", name, err)
		}
		if err := stmt.QueryRowContext(ctx, 2).Scan(&name); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("rolled-back row: %v, want sql.ErrNoRows", err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil || n != 1 {
			t.Fatalf("count = %d, %v", n, err)
		}
		if err := db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "DROP TABLE "+table); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServerNeverSeesMoreConnectionsThanThePoolMaximum(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		const maxConns, goroutines, queriesEach = 5, 64, 10
		db, c := openDB(t, withKeys(s, "respool_max_conns=5&respool_max_queue=100"))
		mon := monitor(t, s)
		count := newConnectionCounter(t, ctx, s, mon)

		stop := make(chan struct{})
		var seen []int
		var monErr error
		monDone := make(chan struct{})
		go func() {
			defer close(monDone)
			for {
				n, err := count()
				if err != nil {
					monErr = err
					return
				}
				seen = append(seen, n)
				select {
				case <-stop:
					return
				default:
				}
			}
		}()

		var wg sync.WaitGroup
		errs := make(chan error, goroutines*queriesEach)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range queriesEach {
					var v any
					if err := db.QueryRowContext(ctx, sleepQuery(s, "0.002")).Scan(&v); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		<-monDone
		close(errs)
		for err := range errs {
			t.Fatalf("query: %v", err)
		}
		if monErr != nil {
			t.Fatal(monErr)
		}
		peak := 0
		for _, n := range seen {
			peak = max(peak, n)
		}
		st := c.Stats()
		p99, _ := st.WaitHistogram.Quantile(0.99)
		t.Logf("%d samples, server peak %d connections; pool: takes %d, waits %d, creates %d, p99 wait <= %v",
			len(seen), peak, st.Takes, st.Waits, st.Creates, p99)
		if peak > maxConns {
			t.Fatalf("the server saw %d connections, pool maximum %d", peak, maxConns)
		}
		if peak == 0 || len(seen) < 5 {
			t.Fatalf("monitor saw %v: it did not observe the load", seen)
		}
		if st.Total > maxConns || st.Creates > maxConns {
			t.Fatalf("pool stats %+v exceed the maximum", st)
		}
		if st.Takes < goroutines*queriesEach {
			t.Fatalf("takes = %d, want at least %d: database/sql kept connections of its own", st.Takes, goroutines*queriesEach)
		}
		// database/sql keeps idle shells that hold no connection: every
		// connection the server has is idle in respool's pool.
		after := c.Stats()
		onServer, err := count()
		if err != nil {
			t.Fatal(err)
		}
		if after.InUse != 0 || after.Idle != after.Total || onServer != after.Total {
			t.Fatalf("after the load: pool %d idle of %d (%d in use), server %d connections; want every connection idle in respool's pool (database/sql idle: %d shells)",
				after.Idle, after.Total, after.InUse, onServer, db.Stats().Idle)
		}
	})
}

func TestQueueFullReachesTheCaller(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c := openDB(t, withKeys(s, "respool_max_conns=1&respool_max_queue=1"))
		held, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitCtx, cancel := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() { waited <- db.QueryRowContext(waitCtx, "SELECT 1").Scan(new(int)) }()
		for c.Stats().Queued != 1 { // until the second caller queues
			if ctx.Err() != nil {
				t.Fatal("the second caller never queued")
			}
			runtime.Gosched()
		}
		err = db.QueryRowContext(ctx, "SELECT 1").Scan(new(int))
		if !errors.Is(err, pool.ErrQueueFull) {
			t.Fatalf("third caller got %v, want pool.ErrQueueFull", err)
		}
		cancel()
		if err := <-waited; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiting caller got %v, want context.Canceled", err)
		}
		held.Close()
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatalf("after the queue drained: %v", err)
		}
	})
}

func TestRealDriverErrorsReachTheCallerUnchanged(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, _ := openDB(t, withKeys(s, "respool_max_conns=2"))
		_, err := db.ExecContext(ctx, "SELECT * FROM no_such_table")
		switch s.Kind {
		case servers.KindPostgres:
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
				t.Fatalf("error = %#v, want a *pgconn.PgError 42P01", err)
			}
		default:
			me, ok := err.(*mysql.MySQLError)
			if !ok || me.Number != 1146 {
				t.Fatalf("error = %#v, want a *mysql.MySQLError 1146", err)
			}
		}
		// The pool stays usable after a statement error.
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConnectErrorsAreTheRealDriversAndHideThePassword(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		const wrong = "wrong-secret-Xy7"
		dsn := strings.Replace(withKeys(s, "respool_max_conns=1"), s.Password, wrong, 1)
		db, err := sql.Open("respool", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.PingContext(ctx)
		if err == nil {
			t.Fatal("ping with a wrong password succeeded")
		}
		if strings.Contains(err.Error(), wrong) {
			t.Fatalf("error shows the password: %v", err)
		}
		switch s.Kind {
		case servers.KindPostgres:
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
				t.Fatalf("error = %v, want a *pgconn.PgError 28P01", err)
			}
		default:
			me, ok := err.(*mysql.MySQLError)
			if !ok || me.Number != 1045 {
				t.Fatalf("error = %#v, want a *mysql.MySQLError 1045", err)
			}
		}
	})
}

func TestCancelledQueryLeavesThePoolHealthy(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c := openDB(t, withKeys(s, "respool_max_conns=2"))
		qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := db.ExecContext(qctx, sleepQuery(s, "30"))
		if err == nil {
			t.Fatal("a 30 s sleep finished within 200 ms")
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("cancellation took %v", d)
		}
		for range 5 {
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
				t.Fatalf("query after the cancelled one: %v", err)
			}
		}
		if st := c.Stats(); st.Total > 2 || st.InUse != 0 {
			t.Fatalf("pool after cancel: %+v", st)
		}
	})
}

//go:noinline
func startAndForgetRows(ctx context.Context, db *sql.DB) (*sql.Rows, error) {
	return db.QueryContext(ctx, "SELECT 1")
}

//go:noinline
func startAndForgetTx(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	return db.BeginTx(ctx, nil)
}

func TestLeakedRowsAndTxAreReportedWithTheStackThatStartedThem(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c, h := openLogged(t, withKeys(s, "respool_max_conns=2&respool_leak_stack=true&respool_leak_threshold=100ms&respool_validation_interval=20ms"),
			"HELD-TOO-LONG")
		rows, err := startAndForgetRows(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := startAndForgetTx(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			select {
			case <-h.seen:
			case <-ctx.Done():
				t.Fatalf("HELD-TOO-LONG reports: want 2 (rows and tx left open); log:\n%s", h.String())
			}
		}
		for _, fn := range []string{"startAndForgetRows", "startAndForgetTx"} {
			if log := h.String(); !strings.Contains(log, fn) {
				t.Fatalf("reports %q do not name %s, which started what was left open", log, fn)
			}
		}
		if st := c.Stats(); st.HeldTooLong != 2 {
			t.Fatalf("HeldTooLong = %d, want 2", st.HeldTooLong)
		}
		rows.Close()
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConnectionLeftInATransactionIsNotReused(t *testing.T) {
	ctx := ctxT(t)
	db, c := openDB(t, withKeys(pg, "respool_max_conns=1"))
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if destroyed := st.Destroys.Invalid + st.Destroys.Discarded + st.Destroys.Rejected; destroyed != 1 || st.Creates != 2 {
		t.Fatalf("stats %+v: want the connection left in a transaction destroyed and a new one made", st)
	}
}

// newConnectionCounter returns a function counting the server's connections
// opened since it was called (so that connections other tests left behind,
// such as a MariaDB thread still running a cancelled SLEEP, do not count).
func newConnectionCounter(t *testing.T, ctx context.Context, s *servers.Server, mon *sql.DB) func() (int, error) {
	t.Helper()
	var q string
	var since any
	switch s.Kind {
	case servers.KindPostgres:
		var ts time.Time
		if err := mon.QueryRowContext(ctx, "SELECT now()").Scan(&ts); err != nil {
			t.Fatal(err)
		}
		since = ts
		q = `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'
			AND pid <> pg_backend_pid() AND backend_start > $2`
	default:
		var id int64
		if err := mon.QueryRowContext(ctx, "SELECT MAX(id) FROM information_schema.processlist").Scan(&id); err != nil {
			t.Fatal(err)
		}
		since = id
		q = `SELECT COUNT(*) FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID() AND id > ?`
	}
	return func() (int, error) {
		var n int
		err := mon.QueryRowContext(ctx, q, s.Database, since).Scan(&n)
		return n, err
	}
}

// A statement prepared through *sql.DB keeps working while its connections
// go back to respool's pool and come back different: it is prepared again on
// whichever connection serves it.
func TestPreparedStatementAcrossPooledConnections(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c := openDB(t, withKeys(s, "respool_max_conns=2"))
		stmt, err := db.PrepareContext(ctx, "SELECT "+placeholder(s, 1)+" + 1")
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		var wg sync.WaitGroup
		errs := make(chan error, 4*50)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					var n int
					if err := stmt.QueryRowContext(ctx, g*100+i).Scan(&n); err != nil {
						errs <- err
					} else if n != g*100+i+1 {
						errs <- fmt.Errorf("got %d, want %d", n, g*100+i+1)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Total > 2 || st.InUse != 0 {
			t.Fatalf("pool after the statements: %+v", st)
		}
	})
}
