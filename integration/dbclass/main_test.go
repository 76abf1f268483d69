package dbclass

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
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

func serverDB(t *testing.T, s *servers.Server) *sql.DB {
	return servers.OpenDB(t, s.DriverName(), s.DSN())
}

// eachServer runs fn as a subtest against PostgreSQL and MariaDB.
func eachServer(t *testing.T, fn func(t *testing.T, s *servers.Server)) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) { fn(t, s) })
	}
}

// expect checks err's class and server code and returns the verdict.
func expect(t *testing.T, err error, class dbguard.Class, code string) dbguard.Classification {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v %s", class, code)
	}
	v := dbguard.Classify(err)
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
