package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/chaos"
	"github.com/respool/respool/integration/servers"
)

// injectedError runs query through chaos over s with err injected, and
// returns the error the caller gets.
func injectedError(t *testing.T, ctx context.Context, s *servers.Server, err error, query string) error {
	t.Helper()
	db, _ := chaosDB(t, s, chaos.Fault{Kind: chaos.KindError, Err: err})
	_, got := db.ExecContext(ctx, query)
	return got
}

// sameServerError checks the fields a server's error carries.
func sameServerError(t *testing.T, real, injected error) {
	t.Helper()
	var rp, ip *pgconn.PgError
	var rm, im *mysql.MySQLError
	switch {
	case errors.As(real, &rp) && errors.As(injected, &ip):
		if rp.Code != ip.Code || rp.Severity != ip.Severity || rp.SeverityUnlocalized != ip.SeverityUnlocalized {
			t.Errorf("real %+v\ninjected %+v", rp, ip)
		}
	case errors.As(real, &rm) && errors.As(injected, &im):
		if rm.Number != im.Number || rm.SQLState != im.SQLState {
			t.Errorf("real %d %q, injected %d %q", rm.Number, rm.SQLState, im.Number, im.SQLState)
		}
	default:
		t.Errorf("real %v, injected %v: not the same server's errors", real, injected)
	}
}

// TestServerErrorsAsReal: an injected server error is the server's own,
// field for field (code, severity or SQLSTATE), type for type and class for
// class.
func TestServerErrorsAsReal(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db := plainDB(t, s)
		servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS chaos_errors", "CREATE TABLE chaos_errors (k INT PRIMARY KEY)",
			"INSERT INTO chaos_errors VALUES (1)")
		t.Cleanup(func() { db.ExecContext(context.Background(), "DROP TABLE chaos_errors") })
		var syntax, unique, nowait error = chaos.PgError("42601"), chaos.PgError("23505"), chaos.PgError("55P03")
		if s.Kind == servers.KindMariaDB {
			syntax, unique, nowait = chaos.MySQLError(1064), chaos.MySQLError(1062), chaos.MySQLError(1205)
		}
		check := func(name string, real error, injected error) {
			t.Run(name, func(t *testing.T) {
				same(t, real, injected)
				sameServerError(t, real, injected)
			})
		}
		_, err := db.ExecContext(ctx, "SELEC 1")
		check("syntax", err, injectedError(t, ctx, s, syntax, "SELECT 1"))
		_, err = db.ExecContext(ctx, "INSERT INTO chaos_errors VALUES (1)")
		check("unique", err, injectedError(t, ctx, s, unique, "INSERT INTO chaos_errors VALUES (2)"))

		holder, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Rollback()
		servers.MustExec(t, ctx, holder, "SELECT k FROM chaos_errors WHERE k = 1 FOR UPDATE")
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, err = tx.ExecContext(ctx, "SELECT k FROM chaos_errors WHERE k = 1 FOR UPDATE NOWAIT")
		check("lock not available", err, injectedError(t, ctx, s, nowait, "SELECT 1"))
	})
}

// TestTerminatedAsReal: pg_terminate_backend ends a session with FATAL
// 57P01; an injected 57P01 ends the connection too.
func TestTerminatedAsReal(t *testing.T) {
	ctx := ctxT(t)
	db := plainDB(t, pg)
	victim := servers.Pinned(t, ctx, db)
	var pid int
	if err := victim.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var terminated bool
	if err := db.QueryRowContext(ctx, "SELECT pg_terminate_backend($1, 10000)", pid).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, terminated, err)
	}
	_, real := victim.ExecContext(ctx, "SELECT 1")

	cdb, c := chaosDB(t, pg, chaos.Fault{Kind: chaos.KindError, Err: chaos.PgError("57P01"), Every: 2})
	cvictim := servers.Pinned(t, ctx, cdb)
	servers.MustExec(t, ctx, cvictim, "SELECT 1")
	_, injected := cvictim.ExecContext(ctx, "SELECT 1")
	same(t, real, injected)
	sameServerError(t, real, injected)
	// Both connections are gone: the next statement on each fails alike.
	_, realNext := victim.ExecContext(ctx, "SELECT 1")
	_, injectedNext := cvictim.ExecContext(ctx, "SELECT 1")
	if !errors.Is(realNext, driver.ErrBadConn) || !errors.Is(injectedNext, driver.ErrBadConn) {
		t.Errorf("after 57P01: real %v, injected %v; want driver.ErrBadConn", realNext, injectedNext)
	}
	if n := c.Stats().Faults["error"].Injected; n != 1 {
		t.Errorf("%d injected", n)
	}
}

// connectUntilRefused opens connections of db, holding them, until one
// fails, and returns that error.
func connectUntilRefused(t *testing.T, ctx context.Context, db *sql.DB) error {
	t.Helper()
	for range 64 {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("64 connections and no refusal")
	return nil
}

// TestConnectErrorsAsReal: a server that refuses a session for a limit,
// and chaos's stand-in server refusing it with the same code.
func TestConnectErrorsAsReal(t *testing.T) {
	check := func(t *testing.T, s *servers.Server, real error, code error) {
		t.Helper()
		db, _ := chaosDB(t, s, chaos.Fault{Kind: chaos.KindError, On: chaos.OpConnect, Err: code})
		injected := db.PingContext(ctxT(t))
		same(t, real, injected)
		sameServerError(t, real, injected)
	}
	t.Run("postgres 53300 role limit", func(t *testing.T) {
		ctx := ctxT(t)
		admin := plainDB(t, pg)
		servers.MustExec(t, ctx, admin, "DROP ROLE IF EXISTS chaos_limited",
			"CREATE ROLE chaos_limited LOGIN PASSWORD 'limited-secret' CONNECTION LIMIT 1")
		t.Cleanup(func() { admin.ExecContext(context.Background(), "DROP ROLE chaos_limited") })
		u := url.URL{Scheme: "postgres", User: url.UserPassword("chaos_limited", "limited-secret"), Host: pg.Addr(),
			Path: "/" + pg.Database, RawQuery: "sslmode=disable"}
		check(t, pg, connectUntilRefused(t, ctx, servers.OpenDB(t, "pgx", u.String())), chaos.PgError("53300"))
	})
	t.Run("mariadb 1226 MAX_USER_CONNECTIONS", func(t *testing.T) {
		ctx := ctxT(t)
		root := servers.AdminConn(t, ctx, maria)
		servers.MustExec(t, ctx, root, "DROP USER IF EXISTS 'chaos_limited'@'%'",
			"CREATE USER 'chaos_limited'@'%' IDENTIFIED BY 'limited-secret' WITH MAX_USER_CONNECTIONS 1")
		t.Cleanup(func() { root.ExecContext(context.Background(), "DROP USER 'chaos_limited'@'%'") })
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "chaos_limited", "limited-secret", "tcp", maria.Addr()
		check(t, maria, connectUntilRefused(t, ctx, servers.OpenDB(t, "mysql", cfg.FormatDSN())), chaos.MySQLError(1226))
	})
	t.Run("mariadb 1040 max_connections", func(t *testing.T) {
		ctx := ctxT(t)
		root := servers.AdminConn(t, ctx, maria)
		var was int
		if err := root.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections").Scan(&was); err != nil {
			t.Fatal(err)
		}
		servers.MustExec(t, ctx, root, "SET GLOBAL max_connections = 10")
		defer root.ExecContext(context.Background(), "SET GLOBAL max_connections = ?", was)
		real := connectUntilRefused(t, ctx, plainDB(t, maria))
		check(t, maria, real, chaos.MySQLError(1040))
	})
}

// TestRefusedAsReal: a closed port, and chaos's refusal in front of a
// server that is up.
func TestRefusedAsReal(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		closed := strings.Replace(s.DSN(), s.Addr(), servers.ClosedAddr(t), 1)
		db, _ := chaosDB(t, s, chaos.Fault{Kind: chaos.KindRefuse})
		same(t, servers.OpenDB(t, s.DriverName(), closed).PingContext(ctx), db.PingContext(ctx))
	})
}

// rawExec runs an Exec on the driver's own connection of c, after closing
// it first when closeFirst: as a connection the driver knows is closed.
func rawExec(t *testing.T, ctx context.Context, c *sql.Conn, closeFirst bool) error {
	t.Helper()
	var err error
	if rerr := c.Raw(func(dc any) error {
		if closeFirst {
			dc.(driver.Conn).Close()
		}
		_, err = dc.(driver.ExecerContext).ExecContext(ctx, "SELECT 1", nil)
		return nil
	}); rerr != nil {
		t.Fatal(rerr)
	}
	return err
}

// TestDropBeforeAsReal: a connection the driver knows is closed, and
// chaos's drop before sending.
func TestDropBeforeAsReal(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		real := rawExec(t, ctx, servers.Pinned(t, ctx, plainDB(t, s)), true)
		db, _ := chaosDB(t, s, chaos.Fault{Kind: chaos.KindDrop})
		injected := rawExec(t, ctx, servers.Pinned(t, ctx, db), false)
		same(t, real, injected)
	})
}
