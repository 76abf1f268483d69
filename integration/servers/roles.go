package servers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // adminDB's driver "pgx"
)

// rolePoll is how often Promote and SetReadOnly look at the server's state:
// often, since failover tests time what follows from that moment.
const rolePoll = 2 * time.Millisecond

// pgFiles is what the harness knows of a local PostgreSQL server it runs,
// for StartStandby, Promote and StopImmediate.
type pgFiles struct {
	bin  string              // the postgres binary; pg_ctl and pg_basebackup are beside it
	data string              // the data directory
	cred *syscall.Credential // the OS user the server runs as; nil: ourselves
	o    options             // the server's options, which its standbys share
}

// tool returns the path of the PostgreSQL program name of the server's
// version.
func (f *pgFiles) tool(name string) (string, error) {
	real, err := filepath.EvalSymlinks(f.bin)
	if err != nil {
		return "", fmt.Errorf("servers: %w", err)
	}
	return filepath.Join(filepath.Dir(real), name), nil
}

// errNotLocalPostgres is returned by StartStandby, Promote and StopImmediate
// on a server that is not a local PostgreSQL server.
var errNotLocalPostgres = errors.New("servers: StartStandby, Promote and StopImmediate are supported on local PostgreSQL servers only")

// StartStandby starts a streaming standby of s, a running local PostgreSQL
// server: a base backup of s taken with pg_basebackup -R (which writes the
// standby's primary_conninfo and standby.signal) into a new temporary
// directory, served on a free loopback port with s's options. It returns
// once the test user can log in to the standby, which serves reads (hot
// standby) and refuses writes (25006) until Promote. The primary takes
// replication connections from loopback with its defaults (wal_level
// replica, max_wal_senders 10, initdb's pg_hba.conf line for replication
// from 127.0.0.1). The caller must Stop the standby.
func (s *Server) StartStandby(ctx context.Context) (_ *Server, err error) {
	start := time.Now()
	if s.pg == nil || s.local == nil {
		return nil, errNotLocalPostgres
	}
	basebackup, err := s.pg.tool("pg_basebackup")
	if err != nil {
		return nil, err
	}
	dir, err := makePostgresDir(s.pg.cred)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data, logPath := filepath.Join(dir, "data"), filepath.Join(dir, "postgres.log")
	// The password goes into the standby's primary_conninfo (-R), not into
	// an error: runTool's error names the program and its log only.
	conninfo := fmt.Sprintf("host=%s port=%d user=%s password=%s sslmode=disable", s.Host, s.Port, DefaultUser, DefaultPassword)
	if err := runTool(ctx, logPath, s.pg.cred, basebackup, "-D", data, "-R", "-X", "stream", "-c", "fast",
		"--no-sync", "-d", conninfo); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		st, err := servePostgres(ctx, s.pg.o, s.pg.bin, dir, data, logPath, s.pg.cred)
		if err == nil {
			st.Startup = time.Since(start)
		}
		if err == nil || !errors.Is(err, errExited) || attempt == 3 {
			return st, err
		}
	}
}

// Promote makes s, a standby started by StartStandby, a primary as
// `pg_ctl promote` does, and returns once it takes writes: once
// pg_is_in_recovery() is false, looked at every 2 ms on one session.
// Sessions open on the standby stay open.
func (s *Server) Promote(ctx context.Context) error {
	if s.pg == nil || s.local == nil {
		return errNotLocalPostgres
	}
	pgctl, err := s.pg.tool("pg_ctl")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, s.pgAdmin().PgxDSN())
	if err != nil {
		return fmt.Errorf("servers: promote: %w", err)
	}
	defer conn.Close(context.Background())
	// -W: pg_ctl's own wait looks every 100 ms; the session below looks
	// more often.
	if err := runTool(ctx, s.local.logPath, s.pg.cred, pgctl, "promote", "-W", "-D", s.pg.data); err != nil {
		return err
	}
	return pollUntil(ctx, rolePoll, "promote: pg_is_in_recovery() false", func(ctx context.Context) (bool, error) {
		var recovering bool
		err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
		return !recovering, err
	})
}

// StopImmediate stops a local PostgreSQL server as `pg_ctl stop -m
// immediate` does (SIGQUIT to the postmaster), as a crash would for its
// clients: every backend exits at once, without a checkpoint, telling its
// client that the server shut down if it can; new connections are refused.
// It returns once every process of the server has exited. Start starts it
// again, after crash recovery. (Kill ends the processes with SIGKILL: the
// clients get no word from the server.)
func (s *Server) StopImmediate(ctx context.Context) error {
	if s.pg == nil || s.local == nil {
		return errNotLocalPostgres
	}
	return s.local.stopWith(ctx, syscall.SIGQUIT)
}

// SetReadOnly makes the server refuse every write of the test user (on),
// as a demoted primary does, or take them again (off), and returns once a
// new session sees the change. PostgreSQL: ALTER SYSTEM SET
// default_transaction_read_only = on (off: RESET) and pg_reload_conf();
// sessions open take the setting at their next statement, and a write gets
// 25006. MariaDB: SET GLOBAL read_only, at once for every session; the test
// user, who is not SUPER, gets 1290.
func (s *Server) SetReadOnly(ctx context.Context, on bool) error {
	db, err := s.adminDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if s.Kind != KindPostgres {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL read_only = %t", on)); err != nil {
			return fmt.Errorf("servers: set read_only: %w", err)
		}
		return nil
	}
	set, want := "ALTER SYSTEM RESET default_transaction_read_only", "off"
	if on {
		set, want = "ALTER SYSTEM SET default_transaction_read_only = on", "on"
	}
	for _, q := range []string{set, "SELECT pg_reload_conf()"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("servers: %s: %w", q, err)
		}
	}
	// The postmaster reloads its configuration on the signal, and a session
	// it starts after that has the new default.
	return pollUntil(ctx, rolePoll, "default_transaction_read_only "+want, func(ctx context.Context) (bool, error) {
		conn, err := pgx.Connect(ctx, s.PgxDSN())
		if err != nil {
			return false, err
		}
		defer conn.Close(context.Background())
		var got string
		err = conn.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&got)
		return got == want, err
	})
}

// CreateUser creates a user who logs in with password and may do in the
// test database what the test user does (its schema's tables, present and
// future, on PostgreSQL): a user whose password a test can change with
// SetPassword while the harness keeps logging in as the test user.
func (s *Server) CreateUser(ctx context.Context, user, password string) error {
	var qs []string
	if s.Kind == KindPostgres {
		u := pgx.Identifier{user}.Sanitize()
		qs = []string{"CREATE ROLE " + u + " LOGIN PASSWORD " + quote(s.Kind, password),
			"GRANT ALL ON SCHEMA public TO " + u,
			"GRANT ALL ON ALL TABLES IN SCHEMA public TO " + u,
			"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO " + u,
			"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO " + u,
			"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO " + u}
	} else {
		u := quote(s.Kind, user) + "@'%'"
		qs = []string{"CREATE USER " + u + " IDENTIFIED BY " + quote(s.Kind, password),
			"GRANT ALL ON " + DefaultDatabase + ".* TO " + u}
	}
	return s.adminExec(ctx, "create user "+user, qs...)
}

// SetPassword changes the password of user (ALTER USER), as a rotation
// does: sessions open stay open, a new login needs the new password.
func (s *Server) SetPassword(ctx context.Context, user, password string) error {
	q := "ALTER USER " + pgx.Identifier{user}.Sanitize() + " PASSWORD " + quote(s.Kind, password)
	if s.Kind != KindPostgres {
		q = "ALTER USER " + quote(s.Kind, user) + "@'%' IDENTIFIED BY " + quote(s.Kind, password)
	}
	return s.adminExec(ctx, "set the password of "+user, q)
}

// adminExec runs queries in order as an administrator; errors name what,
// never a query, which may hold a password.
func (s *Server) adminExec(ctx context.Context, what string, queries ...string) error {
	db, err := s.adminDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range queries {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("servers: %s: %w", what, err)
		}
	}
	return nil
}

// quote returns s as a string literal of the server kind's SQL.
func quote(kind, s string) string {
	if kind != KindPostgres { // MariaDB's backslash escapes too
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// adminDSNs returns the DSNs, for DriverName's driver, of users who may
// change the server's settings and users, in the order to try them:
// AdminDSN's, then for MariaDB root over TCP (the local server's
// root@127.0.0.1 has no password, the Docker image's has the test
// password).
func (s *Server) adminDSNs() []string {
	var dsns []string
	if dsn := s.AdminDSN(); dsn != "" {
		dsns = append(dsns, dsn)
	}
	if s.Kind == KindMariaDB {
		for _, password := range []string{"", DefaultPassword} {
			cfg := mysql.NewConfig()
			cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "root", password, "tcp", s.Addr()
			dsns = append(dsns, cfg.FormatDSN())
		}
	}
	return dsns
}

// adminDB opens one connection of the first of adminDSNs that lets us in;
// the caller closes the *sql.DB.
func (s *Server) adminDB(ctx context.Context) (*sql.DB, error) {
	var errs []error
	for _, dsn := range s.adminDSNs() {
		db, err := sql.Open(s.DriverName(), dsn)
		if err == nil {
			db.SetMaxOpenConns(1)
			if err = db.PingContext(ctx); err == nil {
				return db, nil
			}
			db.Close()
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("servers: no administrator's connection to %s: %w", s.Kind, errors.Join(errs...))
}

// pollUntil calls cond every interval until it holds, it errs, or ctx
// ends (WaitFor is it for a test).
func pollUntil(ctx context.Context, interval time.Duration, what string, cond func(context.Context) (bool, error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("servers: %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("servers: %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}
