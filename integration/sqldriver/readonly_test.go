package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// TestDemotedPrimaryWritesMoveToTheWritableServer: a PostgreSQL primary
// demoted in place (default_transaction_read_only on, reloaded) while a
// second server, listed after it in a multi-host DSN with
// target_session_attrs=read-write, takes writes. Through respool every
// write after the demotion lands on the second server: a refusal closes
// the connection, the connections made before are closed when taken, and
// the refused write runs again on a new connection, which pgx dials to the
// writable host; at most one refusal per pooled connection reaches the
// server, none the caller. pgx's driver beside it keeps its connections to
// the demoted server and its writes keep failing (reported, not bounded).
func TestDemotedPrimaryWritesMoveToTheWritableServer(t *testing.T) {
	ctx := ctxT(t)
	second, err := servers.StartPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	const table, poolSize, writers, writes = "respool_demoted", 4, 4, 25
	for _, s := range []*servers.Server{pg, second} {
		servers.MustExec(t, ctx, monitor(t, s), "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (who text)")
	}
	dsn := fmt.Sprintf("postgres://%s:%s@%s,%s/%s?sslmode=disable&target_session_attrs=read-write",
		pg.User, pg.Password, pg.Addr(), second.Addr(), pg.Database)
	plain := servers.OpenDB(t, "pgx", dsn)
	plain.SetMaxOpenConns(poolSize)
	plain.SetMaxIdleConns(poolSize)
	rp, _ := openDB(t, dsn+fmt.Sprintf("&respool_max_conns=%d", poolSize))
	dbs := map[string]*sql.DB{"pgx": plain, "respool": rp}
	for _, db := range dbs {
		warm(t, ctx, db, poolSize) // every connection to the first server, the writable one
	}

	demote(t, ctx, pg)

	rows := func(s *servers.Server, who string) int {
		var n int
		if err := monitor(t, s).QueryRowContext(ctx, "SELECT count(*) FROM "+table+" WHERE who = $1", who).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, name := range []string{"pgx", "respool"} {
		db := dbs[name]
		var mu sync.Mutex
		var failed, readOnly int
		var first error
		var wg sync.WaitGroup
		start := time.Now()
		for range writers {
			wg.Go(func() {
				for range writes {
					wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := db.ExecContext(wctx, "INSERT INTO "+table+" VALUES ($1)", name)
					cancel()
					if err == nil {
						continue
					}
					var pgErr *pgconn.PgError
					mu.Lock()
					failed++
					if errors.As(err, &pgErr) && pgErr.Code == "25006" {
						readOnly++
					}
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		onSecond, onFirst := rows(second, name), rows(pg, name)
		t.Logf("%s: %d writes in %v: %d failed (%d read-only), %d on the writable server, %d on the demoted one; first error: %v",
			name, writers*writes, time.Since(start).Round(time.Millisecond), failed, readOnly, onSecond, onFirst, first)
		if name == "respool" && (failed != 0 || onSecond != writers*writes) {
			t.Errorf("respool: %d writes failed (first: %v), %d of %d on the writable server; want none failed, all there",
				failed, first, onSecond, writers*writes)
		}
	}
}

// demote makes s read-only for the test user until the test ends, as a
// demoted primary is: PostgreSQL's default_transaction_read_only on for
// the server (ALTER SYSTEM, reloaded: every session's writes get 25006),
// MariaDB's read_only (SET GLOBAL by root: the test user, who is not
// SUPER, gets 1290).
func demote(t *testing.T, ctx context.Context, s *servers.Server) {
	t.Helper()
	setReadOnly(t, ctx, s, true)
	t.Cleanup(func() { setReadOnly(t, ctx, s, false) })
}

// setReadOnly makes s read-only for every new session (PostgreSQL:
// default_transaction_read_only, reloaded; MariaDB: read_only) or writable
// again, and returns once a new session sees it.
func setReadOnly(t *testing.T, ctx context.Context, s *servers.Server, on bool) {
	t.Helper()
	admin := adminDB(t, s)
	if s.Kind != servers.KindPostgres {
		servers.MustExec(t, ctx, admin, fmt.Sprintf("SET GLOBAL read_only = %t", on))
		return
	}
	v := map[bool]string{true: "on", false: "off"}[on]
	servers.MustExec(t, ctx, admin, "ALTER SYSTEM SET default_transaction_read_only = "+v, "SELECT pg_reload_conf()")
	mon := monitor(t, s) // a new session sees the reloaded setting
	servers.WaitFor(t, ctx, "default_transaction_read_only "+v, func() (bool, error) {
		var got string
		err := mon.QueryRowContext(ctx, "SHOW default_transaction_read_only").Scan(&got)
		return got == v, err
	})
}

// adminDB opens s's AdminDSN; the *sql.DB is closed when the test ends
// (after the cleanups registered later).
func adminDB(t *testing.T, s *servers.Server) *sql.DB {
	t.Helper()
	return openOne(t, s.DriverName(), s.AdminDSN())
}

// readOnlyCode returns the server's code of err when it is a refusal as
// read-only (PostgreSQL "25006", MariaDB "1792" or "1290"), else "".
func readOnlyCode(err error) string {
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "25006":
		return pgErr.Code
	case errors.As(err, &myErr) && (myErr.Number == 1792 || myErr.Number == 1290):
		return strconv.Itoa(int(myErr.Number))
	}
	return ""
}

// destroyed returns how many connections the pool has closed, for any
// reason.
func destroyed(c *respool.Connector) uint64 {
	d := c.Stats().Destroys
	return d.Invalid + d.Idle + d.Lifetime + d.TestFailed + d.Discarded + d.Leaked + d.Closed + d.Late +
		d.Rejected + d.Evicted + d.Yielded + d.Reset + d.Resized
}

// TestCallerReadOnlyKeepsThePool: a write refused because the caller made
// its own transaction or session read-only gets the server's error
// (PostgreSQL 25006, MariaDB 1792), as with the plain driver, and the
// server is not taken for a demoted one: no connection is closed, the
// caller's *sql.Conn keeps its session. A server made read-only for
// everyone (PostgreSQL's default_transaction_read_only on for the server,
// MariaDB's read_only, 1290 for a user who is not SUPER) still retires
// every connection made before.
func TestCallerReadOnlyKeepsThePool(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		const poolSize = 4
		table := "respool_caller_ro"
		servers.MustExec(t, ctx, monitor(t, s), "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (k VARCHAR(40))")
		insert := "INSERT INTO " + table + " VALUES ('x')"
		sessionRO, sessionRW, want := "SET default_transaction_read_only = on", "RESET default_transaction_read_only", "25006"
		if s.Kind != servers.KindPostgres {
			sessionRO, sessionRW, want = "SET SESSION TRANSACTION READ ONLY", "SET SESSION TRANSACTION READ WRITE", "1792"
		}
		db, c := openDB(t, withKeys(s, fmt.Sprintf("respool_max_conns=%d", poolSize)))
		warm(t, ctx, db, poolSize)
		creates, destroys := c.Stats().Creates, destroyed(c)
		refused := func(what string, err error) {
			t.Helper()
			if code := readOnlyCode(err); code != want {
				t.Errorf("%s: %v; want the server's %s", what, err, want)
			}
		}

		// The caller's read-only transaction.
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, insert)
		refused("a write in a read-only transaction", err)
		if err := tx.Rollback(); err != nil {
			t.Errorf("Rollback: %v", err)
		}

		// The caller's read-only session, outside a transaction and in one.
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		servers.MustExec(t, ctx, conn, sessionRO)
		_, err = conn.ExecContext(ctx, insert)
		refused("a write on a read-only session", err)
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			t.Errorf("BeginTx on the session after the refusal: %v", err)
		} else {
			_, err = tx.ExecContext(ctx, insert)
			refused("a write in a transaction of a read-only session", err)
			if err := tx.Rollback(); err != nil {
				t.Errorf("Rollback: %v", err)
			}
		}
		if _, err := conn.ExecContext(ctx, sessionRW); err != nil {
			t.Errorf("the session after the refusals: %v", err)
		}
		if _, err := conn.ExecContext(ctx, insert); err != nil {
			t.Errorf("a write on the session made writable again: %v", err)
		}
		_ = conn.Close() // its error was reported above

		warm(t, ctx, db, poolSize)
		if _, err := db.ExecContext(ctx, insert); err != nil {
			t.Errorf("a write after the refusals: %v", err)
		}
		if n, d := c.Stats().Creates-creates, destroyed(c)-destroys; n != 0 || d != 0 {
			t.Errorf("after the caller's own refusals the pool made %d connections and closed %d; want 0 and 0", n, d)
		}

		// The server made read-only for everyone: a refusal in a
		// transaction retires the connections made before.
		demote(t, ctx, s)
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, insert)
		if readOnlyCode(err) == "" {
			t.Errorf("a write in a transaction on the demoted server: %v; want the server's refusal", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Errorf("Rollback: %v", err)
		}
		warm(t, ctx, db, poolSize)
		if d := destroyed(c) - destroys; d < poolSize {
			t.Errorf("the server demoted, a refusal in a transaction: %d connections closed; want the %d made before", d, poolSize)
		}
		// The connections made since go to the same read-only server: a
		// refusal on one of them, within a second of the first, closes
		// nothing and dials nothing (a new connection would be refused
		// too); the caller gets the server's refusal.
		destroys, creates = destroyed(c), c.Stats().Creates
		_, err = db.ExecContext(ctx, insert)
		if readOnlyCode(err) == "" {
			t.Errorf("a write on the demoted server: %v; want the server's refusal", err)
		}
		warm(t, ctx, db, poolSize)
		if n, d := c.Stats().Creates-creates, destroyed(c)-destroys; n != 0 || d != 0 {
			t.Errorf("the server still read-only, a refusal on a connection made since: %d connections made, %d closed; want 0 and 0", n, d)
		}
	})
}

// TestMariaDBReadOnlyServer: MariaDB made read-only for everyone (SET
// GLOBAL read_only=1 by root) refuses the writes of the test user, who is
// not SUPER, with 1290. Through respool, with and without
// go-sql-driver/mysql's rejectReadOnly, the caller gets the plain driver's
// error (1290 without rejectReadOnly, driver.ErrBadConn with it, never
// ErrStatementLost), every connection made before is closed, and once
// read_only is off again the next write succeeds (a refusal is no breaker
// failure). The plain driver beside it keeps its connections. Without
// rejectReadOnly a refused write is run again at most once, on a new
// connection (with it, database/sql retries driver.ErrBadConn as it does
// for the plain driver).
func TestMariaDBReadOnlyServer(t *testing.T) {
	ctx := ctxT(t)
	const poolSize, writes = 4, 20
	table := "respool_maria_ro"
	servers.MustExec(t, ctx, monitor(t, maria), "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (k VARCHAR(40))")
	type pool struct {
		name string
		db   *sql.DB
		c    *respool.Connector // nil for the plain driver
	}
	var pools []pool
	for _, keys := range []string{"rejectReadOnly=false", "rejectReadOnly=true"} {
		plain := servers.OpenDB(t, "mysql", maria.MySQLDSN()+"&"+keys)
		plain.SetMaxOpenConns(poolSize)
		plain.SetMaxIdleConns(poolSize)
		rp, c := openDB(t, withKeys(maria, fmt.Sprintf("%s&respool_max_conns=%d", keys, poolSize)))
		pools = append(pools, pool{"mysql " + keys, plain, nil}, pool{"respool " + keys, rp, c})
	}
	destroys := make([]uint64, len(pools))
	for i, p := range pools {
		warm(t, ctx, p.db, poolSize)
		if p.c != nil {
			destroys[i] = destroyed(p.c)
		}
	}
	mon := monitor(t, maria)
	before, err := maria.CountConnections(ctx, mon)
	if err != nil {
		t.Fatal(err)
	}

	insert := "INSERT INTO " + table + " VALUES (?)"
	demote(t, ctx, maria)
	for i, p := range pools {
		var failed int
		var last error
		for range writes {
			if _, err := p.db.ExecContext(ctx, insert, p.name); err != nil {
				failed, last = failed+1, err
			}
		}
		t.Logf("%s: %d of %d writes failed on the read-only server; last: %v", p.name, failed, writes, last)
		if p.c == nil {
			continue
		}
		warm(t, ctx, p.db, poolSize)
		d := destroyed(p.c) - destroys[i]
		t.Logf("%s: %d connections closed", p.name, d)
		switch {
		case failed != writes:
			t.Errorf("%s: %d of %d writes failed on the read-only server; want all", p.name, failed, writes)
		case errors.Is(last, respool.ErrStatementLost):
			t.Errorf("%s: %v; want the plain driver's error", p.name, last)
		case p.name == "respool rejectReadOnly=false" && readOnlyCode(last) != "1290":
			t.Errorf("%s: %v; want the server's 1290", p.name, last)
		case d < poolSize:
			t.Errorf("%s: %d connections closed; want the %d made before the server became read-only", p.name, d, poolSize)
		case p.name == "respool rejectReadOnly=false" && d > poolSize+writes:
			// A write refused on a connection made for it is not run
			// again: one new connection a write, not one per retry.
			t.Errorf("%s: %d connections closed for %d writes; want at most %d", p.name, d, writes, poolSize+writes)
		}
	}
	after, err := maria.CountConnections(ctx, mon)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server sessions of the test user: %d before, %d after (4 pools of %d)", before, after, poolSize)

	servers.MustExec(t, ctx, adminDB(t, maria), "SET GLOBAL read_only = 0")
	for _, p := range pools {
		if _, err := p.db.ExecContext(ctx, insert, p.name); err != nil {
			t.Errorf("%s: the first write once the server takes writes again: %v", p.name, err)
		}
	}
}
