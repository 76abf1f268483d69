package sqldriver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// A caller who moves from the plain driver to respool keeps the driver's
// documented error contracts. Each test runs the same calls through both in
// the same run.

// TestDeadlineEndedStatementIsAPgconnTimeout: pgx documents that
// pgconn.Timeout(err) is true for a statement its context's deadline
// ended. respool asks the server to cancel such a statement (CancelWait),
// and the server's 57014 query_canceled must not hide the timeout.
func TestDeadlineEndedStatementIsAPgconnTimeout(t *testing.T) {
	ctx := ctxT(t)
	dbs := map[string]*sql.DB{
		"pgx":     openPlain(t, pg, 1),
		"respool": func() *sql.DB { db, _ := openDB(t, withKeys(pg, "respool_max_conns=1")); return db }(),
	}
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			if err := db.PingContext(ctx); err != nil { // the statements below find a connection open
				t.Fatal(err)
			}
			for _, call := range []struct {
				name string
				run  func(context.Context, *sql.Conn) error
			}{
				{"exec", func(ctx context.Context, c *sql.Conn) error {
					_, err := c.ExecContext(ctx, sleepQuery(pg, "30"))
					return err
				}},
				{"query", func(ctx context.Context, c *sql.Conn) error {
					return c.QueryRowContext(ctx, sleepQuery(pg, "30")).Scan(new(any))
				}},
			} {
				// The deadline ends while the statement runs, not while
				// database/sql waits for a connection (whose error is
				// database/sql's context.DeadlineExceeded, with either):
				// the connection is in hand before it starts.
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.PingContext(ctx); err != nil {
					t.Fatal(err)
				}
				qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				err = call.run(qctx, c)
				cancel()
				_ = c.Close() // pgx's driver closed it after the timeout: ErrBadConn, nothing to report
				if !pgconn.Timeout(err) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s: %v: pgconn.Timeout %v, errors.Is(err, context.DeadlineExceeded) %v; want both true",
						call.name, err, pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded))
				}
				if pgconn.SafeToRetry(err) {
					t.Errorf("%s: %v: pgconn.SafeToRetry true for a statement that ran", call.name, err)
				}
			}
			// A cancelled (not timed out) statement is no timeout, with either.
			qctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			_, err := db.ExecContext(qctx, sleepQuery(pg, "30"))
			if pgconn.Timeout(err) || !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v: pgconn.Timeout %v, errors.Is(err, context.Canceled) %v; want false, true",
					err, pgconn.Timeout(err), errors.Is(err, context.Canceled))
			}
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
				t.Fatalf("after the timeouts: %v", err)
			}
		})
	}
}

// TestRejectReadOnlyRetriesOnANewConnection: go-sql-driver/mysql's
// rejectReadOnly=true closes a connection whose write the server refused as
// read-only (1792, 1290, 1836) and returns driver.ErrBadConn, so that
// database/sql runs the statement again on a new connection: the refused
// write did not run. Here the session of the pool's only connection is made
// read-only (SET SESSION TRANSACTION READ ONLY: its writes fail with 1792),
// a new session is not: the write succeeds on the retry, once, with either.
// With multiStatements a refusal can follow a statement that ran (the
// second of two): the plain driver runs the first one again, respool must
// not.
func TestRejectReadOnlyRetriesOnANewConnection(t *testing.T) {
	ctx := ctxT(t)
	table := "respool_reject_ro"
	servers.MustExec(t, ctx, monitor(t, maria), "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (k VARCHAR(40), n INT)")
	count := func(k string) int {
		var n int
		if err := monitor(t, maria).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE k = ?", k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	dbs := map[string]func(keys string) *sql.DB{
		"mysql": func(keys string) *sql.DB {
			db := servers.OpenDB(t, "mysql", maria.MySQLDSN()+"&"+keys)
			db.SetMaxOpenConns(1)
			return db
		},
		"respool": func(keys string) *sql.DB {
			db, _ := openDB(t, withKeys(maria, keys+"&respool_max_conns=1"))
			return db
		},
	}
	for name, open := range dbs {
		t.Run(name, func(t *testing.T) {
			db := open("rejectReadOnly=true")
			// A statement without arguments goes as text (COM_QUERY), one
			// with arguments is prepared first (which the server refuses).
			for _, args := range [][]any{nil, {1}} {
				servers.MustExec(t, ctx, db, "SET SESSION TRANSACTION READ ONLY")
				k := fmt.Sprintf("%s-%d", name, len(args))
				q := "INSERT INTO " + table + " VALUES ('" + k + "', 1)"
				if len(args) > 0 {
					q = "INSERT INTO " + table + " VALUES ('" + k + "', ?)"
				}
				if _, err := db.ExecContext(ctx, q, args...); err != nil {
					t.Errorf("%d arguments: a write refused as read-only, then run on a new connection: %v", len(args), err)
				}
				if n := count(k); n != 1 {
					t.Errorf("%d arguments: the write ran %d times, want 1", len(args), n)
				}
			}
			// The refusal follows a statement that ran: not run again by respool.
			db = open("rejectReadOnly=true&multiStatements=true")
			k := name + "-multi"
			_, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES ('"+k+"', 1); SET SESSION TRANSACTION READ ONLY; INSERT INTO "+table+" VALUES ('"+k+"', 2)")
			t.Logf("%s: a refusal after a statement that ran: %v; the first statement ran %d times", name, err, count(k))
			if name == "respool" && (!errors.Is(err, respool.ErrStatementLost) || count(k) != 1) {
				t.Errorf("a refusal after a statement that ran: %v, the first statement ran %d times; want ErrStatementLost, once", err, count(k))
			}
		})
	}
}

// TestNoConnectionIsNotAnArgumentError: a statement that gets no connection
// (here its context ends while every connection is held) fails with the
// same error whether or not it has arguments, as with the plain driver,
// whose database/sql returns the context's error. respool takes its
// connection as database/sql reuses an idle shell, and database/sql reads
// the arguments (CheckNamedValue) before it runs the statement: the take's
// error must not come back as "sql: converting argument $1 type: ...".
func TestNoConnectionIsNotAnArgumentError(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		plain := openPlain(t, s, 1)
		plain.SetMaxOpenConns(1)
		db, c := openDB(t, withKeys(s, "respool_max_conns=1"))
		for name, db := range map[string]*sql.DB{"plain": plain, "respool": db} {
			t.Run(name, func(t *testing.T) {
				warm(t, ctx, db, 1) // an idle shell for respool
				holder := db
				if name == "respool" {
					holder = secondDB(t, c) // holds the connection, not db's idle shell
				}
				sc, err := holder.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer sc.Close()
				errs := map[int]error{}
				for _, args := range [][]any{nil, {1}} {
					qctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
					q := "SELECT 1"
					if len(args) > 0 {
						q = "SELECT " + placeholder(s, 1)
					}
					errs[len(args)] = db.QueryRowContext(qctx, q, args...).Scan(new(int))
					cancel()
				}
				for n, err := range errs {
					if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(fmt.Sprint(err), "converting argument") {
						t.Errorf("%d arguments: %v; want the context's error, not an argument's", n, err)
					}
				}
				if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
					t.Errorf("with an argument: %v; without: %v; want the same error", errs[1], errs[0])
				}
			})
		}
	})
}

// TestSeveralStatementsResultThroughRaw: go-sql-driver/mysql's README reads
// the rows affected and insert ids of every statement of a multiStatements
// Exec through sql.Conn.Raw, asserting driver.Execer on the connection and
// mysql.Result on the result; the same code runs through respool, and
// driver.Queryer does too.
func TestSeveralStatementsResultThroughRaw(t *testing.T) {
	ctx := ctxT(t)
	table := "respool_several_results"
	servers.MustExec(t, ctx, monitor(t, maria), "DROP TABLE IF EXISTS "+table,
		"CREATE TABLE "+table+" (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))")
	plain := servers.OpenDB(t, "mysql", maria.MySQLDSN()+"&multiStatements=true")
	db, _ := openDB(t, withKeys(maria, "multiStatements=true"))
	for name, db := range map[string]*sql.DB{"mysql": plain, "respool": db} {
		t.Run(name, func(t *testing.T) {
			sc, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			err = sc.Raw(func(dc any) error {
				//lint:ignore SA1019 as the README does
				ex, ok := dc.(driver.Execer)
				if !ok {
					return fmt.Errorf("%T is not a driver.Execer", dc)
				}
				res, err := ex.Exec("INSERT INTO "+table+" (v) VALUES ('a'), ('b'); INSERT INTO "+table+" (v) VALUES ('c'), ('d'), ('e')", nil)
				if err != nil {
					return err
				}
				mres, ok := res.(mysql.Result)
				if !ok {
					return fmt.Errorf("the result is a %T, not a mysql.Result", res)
				}
				if got := mres.AllRowsAffected(); !slices.Equal(got, []int64{2, 3}) {
					t.Errorf("AllRowsAffected %v; want [2 3]", got)
				}
				//lint:ignore SA1019 as Execer
				qr, ok := dc.(driver.Queryer)
				if !ok {
					return fmt.Errorf("%T is not a driver.Queryer", dc)
				}
				rows, err := qr.Query("SELECT COUNT(*) FROM "+table, nil)
				if err != nil {
					return err
				}
				dest := make([]driver.Value, 1)
				if err := rows.Next(dest); err != nil {
					return err
				}
				return rows.Close()
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.PingContext(ctx); err != nil {
				t.Fatalf("the connection after Raw: %v", err)
			}
		})
	}
}
