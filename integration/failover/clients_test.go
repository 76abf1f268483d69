package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// poolSize is every client's pool size.
const poolSize = 10

// clients are the pools the suite measures, in the report's column order
// per server kind.
var clients = []client{
	{name: "respool", kind: servers.KindPostgres, respool: true, open: openRespool("")},
	{name: "pgx stdlib", kind: servers.KindPostgres, open: openPgxStdlib},
	{name: "pgxpool", kind: servers.KindPostgres, open: openPgxpool},
	{name: "respool", kind: servers.KindMariaDB, respool: true, open: openRespool("")},
	{name: "respool rejectReadOnly", kind: servers.KindMariaDB, respool: true, open: openRespool("rejectReadOnly=true")},
	{name: "mysql", kind: servers.KindMariaDB, open: openMySQL("")},
	{name: "mysql rejectReadOnly", kind: servers.KindMariaDB, open: openMySQL("rejectReadOnly=true")},
}

// client is a pool under test and how to open it.
type client struct {
	name    string
	kind    string // the server kind it runs on
	respool bool   // issue 16's targets apply
	open    func(t target) (writer, error)
}

func (c client) String() string { return c.name + " (" + c.kind + ")" }

// key names the client in a scenario's outcomes and the report.
func (c client) key() string { return c.kind + "/" + c.name }

// target is what a client is opened on.
type target struct {
	kind  string
	hosts []string // host:port, in the DSN's order (PostgreSQL: target_session_attrs=read-write)
	user  string
	// password is the password of the DSN; secret, when not nil, is the
	// current one, which clients with a per-dial hook give every new
	// connection.
	password string
	secret   *atomic.Pointer[string]
	// lifetime, when not 0, is every connection's maximum lifetime.
	lifetime time.Duration
}

// dsn returns the target's DSN for its kind's plain driver, with the extra
// query keys keys ("" for none).
func (t target) dsn(keys string) string {
	var dsn string
	if t.kind == servers.KindPostgres {
		dsn = fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&target_session_attrs=read-write",
			url.UserPassword(t.user, t.password).String(), strings.Join(t.hosts, ","), servers.DefaultDatabase)
	} else {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = t.user, t.password, "tcp", t.hosts[0], servers.DefaultDatabase
		dsn = cfg.FormatDSN()
		if !strings.Contains(dsn, "?") {
			dsn += "?"
		} else {
			dsn += "&"
		}
		dsn += "timeout=1s"
	}
	if keys != "" {
		dsn += "&" + keys
	}
	return dsn
}

// writer is what the suite needs of a client.
type writer interface {
	// write inserts one row and returns the port of the PostgreSQL server
	// that took it (0 on MariaDB).
	write(ctx context.Context, who string) (port int, err error)
	close() error
}

// openRespool opens respool as a user does: sql.Open("respool", dsn) with
// a pool of poolSize and the DSN keys keys, or, when t has a secret, the
// DSN parsed (respool.ParseDSN) with a per-dial hook
// (PgxBeforeConnect, MySQLBeforeConnect) giving each connection the
// current password, then sql.OpenDB.
func openRespool(keys string) func(t target) (writer, error) {
	return func(t target) (writer, error) {
		k := "respool_max_conns=" + strconv.Itoa(poolSize)
		if keys != "" {
			k += "&" + keys
		}
		if t.lifetime > 0 {
			k += "&respool_max_lifetime=" + t.lifetime.String() + "&respool_max_lifetime_jitter=0s"
		}
		if t.secret == nil {
			db, err := sql.Open("respool", t.dsn(k))
			if err != nil {
				return nil, err
			}
			return &sqlWriter{db: db, kind: t.kind}, nil
		}
		cfg, err := respool.ParseDSN(t.dsn(k))
		if err != nil {
			return nil, err
		}
		if t.kind == servers.KindPostgres {
			cfg.PgxBeforeConnect = func(_ context.Context, c *pgx.ConnConfig) error {
				c.Password = *t.secret.Load()
				return nil
			}
		} else {
			cfg.MySQLBeforeConnect = func(_ context.Context, c *mysql.Config) error {
				c.Passwd = *t.secret.Load()
				return nil
			}
		}
		c, err := respool.NewConnector(*cfg)
		if err != nil {
			return nil, err
		}
		return &sqlWriter{db: sql.OpenDB(c), kind: t.kind}, nil
	}
}

// openPgxStdlib opens database/sql with pgx's stdlib driver, with
// stdlib.OptionBeforeConnect giving each connection the current password
// when t has a secret.
func openPgxStdlib(t target) (writer, error) {
	cfg, err := pgx.ParseConfig(t.dsn(""))
	if err != nil {
		return nil, err
	}
	var opts []stdlib.OptionOpenDB
	if t.secret != nil {
		opts = append(opts, stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
			c.Password = *t.secret.Load()
			return nil
		}))
	}
	return newSQLWriter(stdlib.OpenDB(*cfg, opts...), t), nil
}

// openMySQL opens database/sql with go-sql-driver/mysql and the DSN keys
// keys, with its BeforeConnect option giving each connection the current
// password when t has a secret.
func openMySQL(keys string) func(t target) (writer, error) {
	return func(t target) (writer, error) {
		cfg, err := mysql.ParseDSN(t.dsn(keys))
		if err != nil {
			return nil, err
		}
		if t.secret != nil {
			if err := cfg.Apply(mysql.BeforeConnect(func(_ context.Context, c *mysql.Config) error {
				c.Passwd = *t.secret.Load()
				return nil
			})); err != nil {
				return nil, err
			}
		}
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return newSQLWriter(sql.OpenDB(c), t), nil
	}
}

// newSQLWriter sizes a plain database/sql pool: poolSize open and idle
// (database/sql keeps 2 idle by default, and would close the others as
// they are given back), t's lifetime.
func newSQLWriter(db *sql.DB, t target) *sqlWriter {
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)
	db.SetConnMaxLifetime(t.lifetime)
	return &sqlWriter{db: db, kind: t.kind}
}

// sqlWriter is a *sql.DB on any driver.
type sqlWriter struct {
	db   *sql.DB
	kind string
}

func (w *sqlWriter) write(ctx context.Context, who string) (int, error) {
	if w.kind != servers.KindPostgres {
		_, err := w.db.ExecContext(ctx, insertMySQL, who)
		return 0, err
	}
	var port int
	err := w.db.QueryRowContext(ctx, insertPostgres, who).Scan(&port)
	return port, err
}

func (w *sqlWriter) close() error { return w.db.Close() }

// openPgxpool opens pgxpool with pool_max_conns=poolSize, its
// BeforeConnect giving each connection the current password when t has a
// secret.
func openPgxpool(t target) (writer, error) {
	cfg, err := pgxpool.ParseConfig(t.dsn("pool_max_conns=" + strconv.Itoa(poolSize)))
	if err != nil {
		return nil, err
	}
	if t.secret != nil {
		cfg.BeforeConnect = func(_ context.Context, c *pgx.ConnConfig) error {
			c.Password = *t.secret.Load()
			return nil
		}
	}
	if t.lifetime > 0 {
		cfg.MaxConnLifetime, cfg.MaxConnLifetimeJitter = t.lifetime, 0
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return pgxpoolWriter{p}, nil
}

type pgxpoolWriter struct{ p *pgxpool.Pool }

func (w pgxpoolWriter) write(ctx context.Context, who string) (int, error) {
	var port int
	err := w.p.QueryRow(ctx, insertPostgres, who).Scan(&port)
	return port, err
}

func (w pgxpoolWriter) close() error {
	w.p.Close()
	return nil
}

// The suite's table, and its writes: PostgreSQL's says which server took
// it.
const (
	table          = "failover_writes"
	createTable    = "CREATE TABLE IF NOT EXISTS " + table + " (who VARCHAR(40))"
	insertPostgres = "INSERT INTO " + table + " (who) VALUES ($1) RETURNING inet_server_port()"
	insertMySQL    = "INSERT INTO " + table + " (who) VALUES (?)"
)

// closeWithin closes w and waits at most bound for it.
func closeWithin(w writer, bound time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- w.close() }()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errors.New("close did not return within " + bound.String())
	}
}
