package servers_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/integration/servers"
)

// TestStandbyPromote starts a standby of the shared PostgreSQL server: it
// has the primary's rows and follows its writes, refuses writes (25006)
// until Promote, takes them once Promote returns; StopImmediate then ends
// its sessions and closes its port, and Start brings it back with its rows.
func TestStandbyPromote(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	primary := open(t, pg)
	servers.MustExec(t, ctx, primary, "DROP TABLE IF EXISTS standby_t", "CREATE TABLE standby_t (n int)",
		"INSERT INTO standby_t VALUES (1)")
	st, err := pg.StartStandby(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Logf("standby on %s started in %v", st.Addr(), st.Startup)
	if st.Addr() == pg.Addr() {
		t.Fatalf("standby on the primary's address %s", st.Addr())
	}
	standby := open(t, st)
	servers.MustExec(t, ctx, primary, "INSERT INTO standby_t VALUES (2)")
	servers.WaitFor(t, ctx, "the primary's rows on the standby", func() (bool, error) {
		var n int
		err := standby.QueryRowContext(ctx, "SELECT count(*) FROM standby_t").Scan(&n)
		return n == 2, err
	})
	_, err = standby.ExecContext(ctx, "INSERT INTO standby_t VALUES (3)")
	if code := pgCode(err); code != "25006" {
		t.Fatalf("a write on the standby: %v; want 25006", err)
	}

	if err := st.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	// The servers run with synchronous_commit off, whose commits a crash
	// may lose: this one waits for its WAL to be written.
	tx, err := standby.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	servers.MustExec(t, ctx, tx, "SET LOCAL synchronous_commit = on", "INSERT INTO standby_t VALUES (3)")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var recovering bool
	if err := standby.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil || recovering {
		t.Fatalf("after Promote: pg_is_in_recovery() = %v, %v", recovering, err)
	}

	conn := servers.Pinned(t, ctx, standby)
	if err := st.StopImmediate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.PingContext(ctx); err == nil {
		t.Error("a session survived StopImmediate")
	}
	if c, err := net.DialTimeout("tcp", st.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s accepts connections after StopImmediate", st.Addr())
	}
	if err := st.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := standby.QueryRowContext(ctx, "SELECT count(*) FROM standby_t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("after StopImmediate and Start: %d rows, %v; want 3", n, err)
	}
}

// TestRolesNeedLocalPostgres: StartStandby, Promote and StopImmediate
// refuse a server the harness does not run as a local PostgreSQL server.
func TestRolesNeedLocalPostgres(t *testing.T) {
	for _, s := range []*servers.Server{maria, {Kind: servers.KindPostgres}} {
		if _, err := s.StartStandby(t.Context()); err == nil {
			t.Errorf("StartStandby of a %s server the harness does not run succeeded", s.Kind)
		}
		if err := s.Promote(t.Context()); err == nil {
			t.Errorf("Promote of a %s server the harness does not run succeeded", s.Kind)
		}
		if err := s.StopImmediate(t.Context()); err == nil {
			t.Errorf("StopImmediate of a %s server the harness does not run succeeded", s.Kind)
		}
	}
}

// TestSetReadOnly: once SetReadOnly(true) returns, a write of the test user
// on a new session and on one opened before is refused as read-only
// (PostgreSQL 25006, MariaDB 1290); once SetReadOnly(false) returns, both
// take writes again.
func TestSetReadOnly(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		db := open(t, s)
		servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS ro_t", "CREATE TABLE ro_t (n int)")
		before := servers.Pinned(t, ctx, db)
		insert := "INSERT INTO ro_t VALUES (1)"
		servers.MustExec(t, ctx, before, insert)
		if err := s.SetReadOnly(ctx, true); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.SetReadOnly(context.Background(), false) })
		want := map[string]string{servers.KindPostgres: "25006", servers.KindMariaDB: "1290"}[s.Kind]
		after := open(t, s)
		for what, e := range map[string]interface {
			ExecContext(context.Context, string, ...any) (sql.Result, error)
		}{"a session opened before": before, "a new session": after} {
			// A PostgreSQL session opened before takes the reloaded setting
			// at its next statement, once it has seen the reload signal.
			servers.WaitFor(t, ctx, "a write refused on "+what, func() (bool, error) {
				_, err := e.ExecContext(ctx, insert)
				if err == nil && s.Kind == servers.KindPostgres && what == "a session opened before" {
					return false, nil
				}
				if code := readOnlyCode(err); code != want {
					return false, fmt.Errorf("%v; want %s", err, want)
				}
				return true, nil
			})
		}
		if err := s.SetReadOnly(ctx, false); err != nil {
			t.Fatal(err)
		}
		servers.MustExec(t, ctx, open(t, s), insert)
		servers.WaitFor(t, ctx, "a write on a session opened before", func() (bool, error) {
			_, err := before.ExecContext(ctx, insert)
			return err == nil, nil
		})
	})
}

var users atomic.Int64

// TestSetPassword: a user made by CreateUser logs in with its password and
// writes to the test database; after SetPassword its open session keeps
// working, a login with the old password is refused (PostgreSQL 28P01,
// MariaDB 1045) and one with the new password succeeds.
func TestSetPassword(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		servers.MustExec(t, ctx, open(t, s), "DROP TABLE IF EXISTS pw_t", "CREATE TABLE pw_t (n int)")
		user := fmt.Sprintf("rotating_%d_%d", time.Now().UnixNano()%1e6, users.Add(1))
		const old, updated = "old-'secret\\", "new-secret"
		if err := s.CreateUser(ctx, user, old); err != nil {
			t.Fatal(err)
		}
		as := func(password string) *sql.DB {
			return open(t, &servers.Server{Kind: s.Kind, Host: s.Host, Port: s.Port, User: user,
				Password: password, Database: s.Database})
		}
		session := servers.Pinned(t, ctx, as(old))
		servers.MustExec(t, ctx, session, "INSERT INTO pw_t VALUES (1)")
		if err := s.SetPassword(ctx, user, updated); err != nil {
			t.Fatal(err)
		}
		servers.MustExec(t, ctx, session, "INSERT INTO pw_t VALUES (2)")
		err := as(old).PingContext(ctx)
		var pgErr *pgconn.PgError
		var myErr *mysql.MySQLError
		if !(errors.As(err, &pgErr) && pgErr.Code == "28P01") && !(errors.As(err, &myErr) && myErr.Number == 1045) {
			t.Errorf("a login with the old password: %v; want 28P01 or 1045", err)
		}
		servers.MustExec(t, ctx, as(updated), "INSERT INTO pw_t VALUES (3)")
	})
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// readOnlyCode returns the server's code of err when it is a refusal as
// read-only (PostgreSQL 25006, MariaDB 1290 or 1792), else "".
func readOnlyCode(err error) string {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && (myErr.Number == 1290 || myErr.Number == 1792) {
		return fmt.Sprint(myErr.Number)
	}
	if c := pgCode(err); c == "25006" {
		return c
	}
	return ""
}
