package servers

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Server kinds.
const (
	KindPostgres = "postgres"
	KindMariaDB  = "mariadb"
)

// Backends a Server can run on.
const (
	BackendDocker = "docker"
	BackendLocal  = "local"
)

// Credentials every Server is started with.
const (
	DefaultUser     = "respool"
	DefaultPassword = "respool-secret"
	DefaultDatabase = "respool"
)

// Server is a running database server. Its exported fields are read-only
// after Start returns.
type Server struct {
	Kind     string // KindPostgres or KindMariaDB
	Backend  string // BackendDocker or BackendLocal
	Host     string
	Port     int
	User     string
	Password string
	Database string
	Startup  time.Duration // how long the start function took

	adminDSN string                      // see AdminDSN
	stop     func(context.Context) error // stops the server and removes its files
	local    *localServer                // nil: the harness does not run the server's processes
	pg       *pgFiles                    // a local PostgreSQL server's files; nil for the others
	stopOnce sync.Once
	stopErr  error
}

// Addr returns host:port of the server's TCP listener.
func (s *Server) Addr() string {
	return net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
}

// PgxDSN returns a PostgreSQL URL for a KindPostgres server, suitable for
// pgx and its database/sql driver "pgx".
func (s *Server) PgxDSN() string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.User, s.Password),
		Host:     s.Addr(),
		Path:     "/" + s.Database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// MySQLDSN returns a go-sql-driver/mysql DSN for a KindMariaDB server.
func (s *Server) MySQLDSN() string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = s.User, s.Password
	cfg.Net, cfg.Addr = "tcp", s.Addr()
	cfg.DBName = s.Database
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

// AdminDSN returns a DSN, for DriverName's driver, of a user who may change
// the server's settings and counters (MariaDB's SET GLOBAL, FLUSH STATUS):
// for PostgreSQL the test user's DSN, since the test user is the server's
// superuser; for a local MariaDB server root over the server's Unix socket,
// which the test user's limits do not apply to. It is "" for a MariaDB
// server in Docker.
func (s *Server) AdminDSN() string {
	if s.Kind == KindPostgres {
		return s.PgxDSN()
	}
	return s.adminDSN
}

// DriverName returns the database/sql driver name for the server's kind:
// "pgx" (github.com/jackc/pgx/v5/stdlib) or "mysql" (go-sql-driver/mysql).
func (s *Server) DriverName() string {
	if s.Kind == KindPostgres {
		return "pgx"
	}
	return "mysql"
}

// DSN returns PgxDSN or MySQLDSN according to the server's kind.
func (s *Server) DSN() string {
	if s.Kind == KindPostgres {
		return s.PgxDSN()
	}
	return s.MySQLDSN()
}

// CountConnections returns how many client connections the server holds for
// the test database (PostgreSQL) or test user (MariaDB), not counting the
// connection of db that runs the query.
func (s *Server) CountConnections(ctx context.Context, db *sql.DB) (int, error) {
	var q string
	var arg any
	switch s.Kind {
	case KindPostgres:
		q = `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`
		arg = s.Database
	case KindMariaDB:
		q = `SELECT COUNT(*) FROM information_schema.processlist
			WHERE user = ? AND id <> CONNECTION_ID()`
		arg = s.User
	default:
		return 0, fmt.Errorf("servers: unknown server kind %q", s.Kind)
	}
	var n int
	if err := db.QueryRowContext(ctx, q, arg).Scan(&n); err != nil {
		return 0, fmt.Errorf("servers: count %s connections: %w", s.Kind, err)
	}
	return n, nil
}

// Stop stops the server and removes its files. It is safe to call more than
// once and concurrently; later calls return the first call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		if s.stop != nil {
			s.stopErr = s.stop(ctx)
		}
	})
	return s.stopErr
}
