package dbclass

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

// lostMarker names the table of the lost-connection tests: the proxy cuts
// a connection right after forwarding a statement that mentions it.
const lostMarker = "dbclass_lost"

// counterTable creates lostMarker with one counter row at 0, directly on
// the server, and returns a function reading the counter.
func counterTable(t *testing.T, ctx context.Context, s *servers.Server) func() int {
	t.Helper()
	db := serverDB(t, s)
	servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS "+lostMarker, "CREATE TABLE "+lostMarker+" (k INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+lostMarker+" VALUES (1, 0)")
	t.Cleanup(func() { db.ExecContext(context.Background(), "DROP TABLE "+lostMarker) })
	return func() int {
		var n int
		if err := db.QueryRowContext(context.Background(), "SELECT n FROM "+lostMarker+" WHERE k = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// waitCounter waits until the server has run the lost statement: its
// outcome was unknown to the client, not to the server.
func waitCounter(t *testing.T, ctx context.Context, counter func() int, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	last := -1
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for last < want {
		last = counter()
		select {
		case <-ctx.Done():
			t.Fatalf("the lost statement ran %d times, want %d", last, want)
		case <-tick.C:
		}
	}
}

func proxiedPgDSN(p *cutProxy) string {
	return strings.Replace(pg.PgxDSN(), pg.Addr(), p.Addr(), 1)
}

// TestConnectionLostAfterSend cuts the connection right after the statement
// reached the server: the client gets an error, the server runs the
// statement. Never retried; reported as ambiguous.
func TestConnectionLostAfterSend(t *testing.T) {
	const update = "UPDATE " + lostMarker + " SET n = n + 1 WHERE k = 1"

	pgxCases := []struct {
		name string
		exec func(ctx context.Context, conn *pgx.Conn) error
	}{
		// QueryExecModeExec sends Parse, Bind and Execute at once: the cut
		// comes after the whole statement, not after a prepare.
		{"pgx extended protocol", func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "UPDATE "+lostMarker+" SET n = n + $1 WHERE k = 1", pgx.QueryExecModeExec, 1)
			return err
		}},
		// pgconn reports this one as "conn closed", which
		// pgconn.SafeToRetry calls safe (see dbguard's doc).
		{"pgx simple protocol", func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, update)
			if pgconn.SafeToRetry(err) {
				t.Logf("pgconn.SafeToRetry(%q) = true, although the statement ran", err)
			}
			return err
		}},
	}
	for _, tc := range pgxCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			counter := counterTable(t, ctx, pg)
			conn, err := pgx.Connect(ctx, proxiedPgDSN(startCutProxy(t, pg.Addr(), lostMarker)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			checkAmbiguous(t, tc.exec(ctx, conn))
			waitCounter(t, ctx, counter, 1)
		})
	}

	t.Run("mysql", func(t *testing.T) {
		ctx := ctxT(t)
		counter := counterTable(t, ctx, maria)
		p := startCutProxy(t, maria.Addr(), lostMarker)
		c := servers.Pinned(t, ctx, servers.OpenDB(t, "mysql", mysqlDSN(p.Addr(), servers.DefaultUser, servers.DefaultPassword, servers.DefaultDatabase)))
		_, err := c.ExecContext(ctx, update)
		checkAmbiguous(t, err)
		waitCounter(t, ctx, counter, 1)
	})
}

func checkAmbiguous(t *testing.T, err error) {
	t.Helper()
	v := expect(t, err, dbguard.ClassAmbiguous, "")
	if v.NothingSent || v.IsConnectRetryable() || v.IsTxRetryable() || !v.IsFailure() {
		t.Errorf("%v: want never retried, a breaker failure", v)
	}
}

// TestPgxStdlibResendsLostStatement documents a hazard of database/sql
// with pgx's stdlib driver that respool's driver inherits: a statement
// without arguments whose connection is lost after it was sent comes back
// from pgconn as "conn closed", which pgconn.SafeToRetry calls safe, which
// stdlib turns into driver.ErrBadConn, on which database/sql runs the
// statement again on a new connection. No error value can undo that: the
// final driver.ErrBadConn is classified as nothing sent, as database/sql's
// contract says. If this test fails, pgx has fixed it: update the
// package documentation of dbguard.
func TestPgxStdlibResendsLostStatement(t *testing.T) {
	ctx := ctxT(t)
	counter := counterTable(t, ctx, pg)
	p := startCutProxy(t, pg.Addr(), lostMarker)
	db := servers.OpenDB(t, "pgx", proxiedPgDSN(p))
	_, err := db.ExecContext(ctx, "UPDATE "+lostMarker+" SET n = n + 1 WHERE k = 1")
	if !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("err = %v, want driver.ErrBadConn", err)
	}
	cuts := int(p.cuts.Load())
	if cuts < 2 {
		t.Fatalf("database/sql sent the statement %d times; the hazard is gone", cuts)
	}
	waitCounter(t, ctx, counter, cuts)
	t.Logf("one ExecContext: the UPDATE was sent and ran %d times; error %q classified %v", counter(), err, dbguard.Classify(err))
}
