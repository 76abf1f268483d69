package dbclass

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/resilience/dbclass"
)

var pg, maria *servers.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(servers.WithServers(m, func(p, mdb *servers.Server) { pg, maria = p, mdb }))
}

// testTimeout bounds every test: each stops by itself well within it.
const testTimeout = 60 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// openDB opens a plain database/sql pool on dsn (pgx stdlib or
// go-sql-driver/mysql), closed when the test ends.
func openDB(t *testing.T, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func serverDB(t *testing.T, s *servers.Server) *sql.DB {
	return openDB(t, s.DriverName(), s.DSN())
}

// pinned returns one connection of db, closed when the test ends.
func pinned(t *testing.T, ctx context.Context, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustExec(t *testing.T, ctx context.Context, e interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := e.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// eachServer runs fn as a subtest against PostgreSQL and MariaDB.
func eachServer(t *testing.T, fn func(t *testing.T, s *servers.Server)) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) { fn(t, s) })
	}
}

// expect checks err's class and server code and returns the verdict.
func expect(t *testing.T, err error, class dbclass.Class, code string) dbclass.Classification {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v %s", class, code)
	}
	v := dbclass.Classify(err)
	if v.Class != class || v.Code != code {
		t.Fatalf("Classify(%q) = %v; want class %v, code %q", err, v, class, code)
	}
	t.Logf("%q: %v", err, v)
	return v
}

// pgDSN returns a pgx DSN for s with another user and password.
func pgDSN(s *servers.Server, user, password string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: s.Addr(),
		Path: "/" + s.Database, RawQuery: "sslmode=disable"}
	return u.String()
}

// mysqlDSN returns a go-sql-driver/mysql DSN for addr with user and
// password, on the test database unless db is "-" (none).
func mysqlDSN(addr, user, password, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, password, "tcp", addr
	if db != "-" {
		cfg.DBName = db
	}
	return cfg.FormatDSN()
}

// mariaRoot returns a connection of MariaDB's root user, who may change
// global limits: the local server's root@127.0.0.1 has no password, the
// Docker image's has the test password.
func mariaRoot(t *testing.T, ctx context.Context) *sql.Conn {
	t.Helper()
	var errs []error
	for _, password := range []string{"", servers.DefaultPassword} {
		db := openDB(t, "mysql", mysqlDSN(maria.Addr(), "root", password, "-"))
		c, err := db.Conn(ctx)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		errs = append(errs, err)
	}
	t.Fatalf("cannot connect to MariaDB as root: %v", errors.Join(errs...))
	return nil
}

// waitFor polls cond until it holds or ctx ends: for a state the server
// reaches on its own (a statement running), which no channel can signal.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
