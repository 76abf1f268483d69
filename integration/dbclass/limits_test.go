package dbclass

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

// maxAttempts bounds the connections a test opens while looking for a
// server's limit.
const maxAttempts = 32

// connectUntilRefused opens connections of db one by one, holding them,
// until one fails; it returns how many succeeded and that error.
func connectUntilRefused(t *testing.T, ctx context.Context, db *sql.DB) (int, error) {
	t.Helper()
	for n := range maxAttempts {
		c, err := db.Conn(ctx)
		if err != nil {
			return n, err
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("%d connections and no refusal", maxAttempts)
	return 0, nil
}

func expectBackPressure(t *testing.T, err error, code string) {
	t.Helper()
	v := expect(t, err, dbguard.ClassBackPressure, code)
	if d, ok := dbguard.BackPressure(err); !ok || d != time.Second {
		t.Errorf("BackPressure = %v, %v; want %v, true", d, ok, time.Second)
	}
	if !v.NothingSent || !v.IsConnectRetryable() || v.IsFailure() {
		t.Errorf("%v: want nothing sent, retryable, not a breaker failure", v)
	}
}

// TestTooManyConnections makes each server refuse a connection for a limit.
//
// PostgreSQL's max_connections is fixed at server start and the harness
// starts every server with 200; a role's CONNECTION LIMIT is refused with
// the same SQLSTATE 53300 ("too many connections for role"). MariaDB's
// max_connections is dynamic: its root lowers it to its minimum, 10, and
// grants a user MAX_USER_CONNECTIONS (1226). The global max_user_connections
// (1203) cannot be produced: a server started with it at 0, as the harness
// starts it, refuses to change it at run time (1290).
func TestTooManyConnections(t *testing.T) {
	t.Run("postgres role limit", func(t *testing.T) {
		ctx := ctxT(t)
		admin := serverDB(t, pg)
		servers.MustExec(t, ctx, admin, "DROP ROLE IF EXISTS dbclass_limited",
			"CREATE ROLE dbclass_limited LOGIN PASSWORD 'limited-secret' CONNECTION LIMIT 1")
		t.Cleanup(func() { admin.ExecContext(context.Background(), "DROP ROLE dbclass_limited") })
		first, err := pgx.Connect(ctx, pgDSN(pg, "dbclass_limited", "limited-secret"))
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close(context.Background())
		_, err = pgx.Connect(ctx, pgDSN(pg, "dbclass_limited", "limited-secret"))
		expectBackPressure(t, err, "53300")
	})

	t.Run("mariadb max_connections", func(t *testing.T) {
		ctx := ctxT(t)
		root := servers.AdminConn(t, ctx, maria)
		var was int
		if err := root.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections").Scan(&was); err != nil {
			t.Fatal(err)
		}
		servers.MustExec(t, ctx, root, "SET GLOBAL max_connections = 10")
		t.Cleanup(func() { root.ExecContext(context.Background(), "SET GLOBAL max_connections = ?", was) })
		opened, err := connectUntilRefused(t, ctx, serverDB(t, maria))
		t.Logf("refused after %d connections", opened)
		expectBackPressure(t, err, "1040")
	})

	t.Run("mariadb user MAX_USER_CONNECTIONS", func(t *testing.T) {
		ctx := ctxT(t)
		root := servers.AdminConn(t, ctx, maria)
		servers.MustExec(t, ctx, root, "DROP USER IF EXISTS 'dbclass_limited'@'%'",
			"CREATE USER 'dbclass_limited'@'%' IDENTIFIED BY 'limited-secret' WITH MAX_USER_CONNECTIONS 1")
		t.Cleanup(func() { root.ExecContext(context.Background(), "DROP USER 'dbclass_limited'@'%'") })
		_, err := connectUntilRefused(t, ctx, servers.OpenDB(t, "mysql", mysqlDSN(maria.Addr(), "dbclass_limited", "limited-secret", "-")))
		expectBackPressure(t, err, "1226")
	})
}

// TestTerminatedBackend: pg_terminate_backend ends a session; its next
// statement meets the server's FATAL 57P01.
func TestTerminatedBackend(t *testing.T) {
	ctx := ctxT(t)
	db := serverDB(t, pg)
	victim := servers.Pinned(t, ctx, db)
	var pid int
	if err := victim.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var terminated bool
	// The second argument waits (up to 10s) until the backend has exited.
	if err := servers.Pinned(t, ctx, db).QueryRowContext(ctx, "SELECT pg_terminate_backend($1, 10000)", pid).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, terminated, err)
	}
	_, err := victim.ExecContext(ctx, "SELECT 1")
	if v := expect(t, err, dbguard.ClassConnection, "57P01"); !v.IsFailure() || v.IsConnectRetryable() {
		t.Errorf("%v: want a breaker failure, not retryable (the statement was sent)", v)
	}
}

// TestKilledConnection: MariaDB's KILL CONNECTION ends a session; the
// client finds out only when its next statement is sent.
func TestKilledConnection(t *testing.T) {
	ctx := ctxT(t)
	db := serverDB(t, maria)
	victim := servers.Pinned(t, ctx, db)
	var id int64
	if err := victim.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	monitor := servers.Pinned(t, ctx, db)
	servers.MustExec(t, ctx, monitor, "KILL CONNECTION "+strconv.FormatInt(id, 10))
	servers.WaitFor(t, ctx, "the killed session to end", func() (bool, error) {
		var n int
		err := monitor.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE id = ?", id).Scan(&n)
		return n == 0, err
	})
	_, err := victim.ExecContext(ctx, "UPDATE nothing SET x = 1")
	if v := dbguard.Classify(err); !v.IsFailure() || v.IsConnectRetryable() || v.IsTxRetryable() {
		t.Fatalf("Classify(%v) = %v: want a breaker failure, never retried", err, v)
	} else {
		t.Logf("%q: %v", err, v)
	}
	if !errors.Is(err, mysql.ErrInvalidConn) && dbguard.Classify(err).Code != "1927" {
		t.Errorf("%v: want mysql.ErrInvalidConn or 1927 connection killed", err)
	}
}
