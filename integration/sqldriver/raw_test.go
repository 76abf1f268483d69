package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool"
)

// pgxOf runs fn with the *pgx.Conn behind sc (sql.Conn.Raw, then
// respool.RawConn[*pgx.Conn], which works on plain pgx's connection too).
func pgxOf(sc *sql.Conn, fn func(c *pgx.Conn) error) error {
	return sc.Raw(func(dc any) error {
		c, err := respool.RawConn[*pgx.Conn](dc)
		if err != nil {
			return err
		}
		return fn(c)
	})
}

// openRespoolAndPgx returns PostgreSQL through respool and through plain
// pgx, for tests that run the same code on both.
func openRespoolAndPgx(t *testing.T) map[string]*sql.DB {
	t.Helper()
	db, _ := openDB(t, withKeys(pg, "respool_max_conns=3"))
	return map[string]*sql.DB{"respool": db, "pgx": openPlain(t, pg, 2)}
}

// TestListenNotifyThroughRawConn listens on a channel with pgx's own API,
// reached through sql.Conn.Raw and respool.RawConn, and receives a
// notification sent through database/sql.
func TestListenNotifyThroughRawConn(t *testing.T) {
	for name, db := range openRespoolAndPgx(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			sc, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			channel := "respool_raw_" + name
			if err := pgxOf(sc, func(c *pgx.Conn) error {
				_, err := c.Exec(ctx, "LISTEN "+channel)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "SELECT pg_notify($1, $2)", channel, "hello"); err != nil {
				t.Fatal(err)
			}
			var payload string
			if err := pgxOf(sc, func(c *pgx.Conn) error {
				n, err := c.WaitForNotification(ctx)
				if err == nil {
					payload = n.Payload
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if payload != "hello" {
				t.Errorf("notification %q; want hello", payload)
			}
			if _, err := sc.ExecContext(ctx, "UNLISTEN "+channel); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCopyFromThroughRawConn copies rows with pgx's CopyFrom on the
// connection behind a *sql.Conn and reads them back through database/sql.
func TestCopyFromThroughRawConn(t *testing.T) {
	for name, db := range openRespoolAndPgx(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			table := "respool_copy_" + name
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY, name text)"); err != nil {
				t.Fatal(err)
			}
			defer db.ExecContext(context.Background(), "DROP TABLE "+table)
			const n = 1000
			src := make([][]any, n)
			for i := range src {
				src[i] = []any{i, fmt.Sprint("row ", i)}
			}
			sc, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			var copied int64
			if err := pgxOf(sc, func(c *pgx.Conn) error {
				copied, err = c.CopyFrom(ctx, pgx.Identifier{table}, []string{"id", "name"}, pgx.CopyFromRows(src))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var count int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&count); err != nil {
				t.Fatal(err)
			}
			if copied != n || count != n {
				t.Errorf("copied %d, counted %d; want %d", copied, count, n)
			}
		})
	}
}
