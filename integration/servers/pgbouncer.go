package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// PgBouncerConfig is the configuration of a PgBouncer the harness runs.
type PgBouncerConfig struct {
	// PoolMode is PgBouncer's pool_mode: "session", "transaction" (the
	// default) or "statement".
	PoolMode string
	// PoolSize is default_pool_size, the server connections PgBouncer opens
	// for the test user and database; 0 means 4.
	PoolSize int
	// MaxClientConn is max_client_conn; 0 means 200.
	MaxClientConn int
	// MaxDBConnections is max_db_connections, the most server connections
	// to the database whatever the pools; 0 means no limit.
	MaxDBConnections int
}

// PgBouncer is a PgBouncer the harness runs on a loopback port in front of
// a PostgreSQL Server, for the test user (scram-sha-256, the password in a
// plain-text userlist) and database. The test user is also its admin
// (database "pgbouncer": SHOW POOLS, over the simple protocol). Install it
// with apt-get install pgbouncer.
type PgBouncer struct {
	Host     string
	Port     int
	User     string
	Password string
	Database string

	dir  string
	proc *process
}

// StartPgBouncer starts pgbouncer in front of pg on a free loopback port
// and waits until the test user can run a query through it, within ctx.
// The caller must Stop it.
func StartPgBouncer(ctx context.Context, pg *Server, cfg PgBouncerConfig) (*PgBouncer, error) {
	bin, ok := findBinary("pgbouncer", []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"})
	if !ok {
		return nil, errors.New("servers: pgbouncer not found: install it (apt-get install -y --no-install-recommends pgbouncer)")
	}
	if cfg.PoolMode == "" {
		cfg.PoolMode = "transaction"
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 4
	}
	if cfg.MaxClientConn == 0 {
		cfg.MaxClientConn = 200
	}
	cred, err := postgresCredential() // pgbouncer refuses to run as root, too
	if err != nil {
		return nil, err
	}
	dir, err := makePostgresDir(cred)
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{Host: "127.0.0.1", User: pg.User, Password: pg.Password, Database: pg.Database, dir: dir}
	for attempt := 1; ; attempt++ { // another process may take the port first: pgbouncer exits
		if b.Port, err = takePort(); err == nil {
			err = b.run(ctx, bin, pg, cfg, cred)
		}
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errExited) || attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// run writes b's configuration for b.Port and starts pgbouncer.
func (b *PgBouncer) run(ctx context.Context, bin string, pg *Server, cfg PgBouncerConfig, cred *syscall.Credential) error {
	userlist := filepath.Join(b.dir, "userlist.txt")
	ini := filepath.Join(b.dir, "pgbouncer.ini")
	conf := strings.Join([]string{
		"[databases]",
		fmt.Sprintf("%s = host=%s port=%d dbname=%s", b.Database, pg.Host, pg.Port, pg.Database),
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		"listen_port = " + strconv.Itoa(b.Port),
		"unix_socket_dir =",
		"auth_type = scram-sha-256",
		"auth_file = " + userlist,
		"pool_mode = " + cfg.PoolMode,
		"default_pool_size = " + strconv.Itoa(cfg.PoolSize),
		"max_client_conn = " + strconv.Itoa(cfg.MaxClientConn),
		"max_db_connections = " + strconv.Itoa(cfg.MaxDBConnections),
		"admin_users = " + b.User,
		"stats_users = " + b.User,
		"",
	}, "\n")
	for path, text := range map[string]string{
		userlist: fmt.Sprintf("%q %q\n", b.User, b.Password),
		ini:      conf,
	} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return fmt.Errorf("servers: %w", err)
		}
		if cred != nil {
			if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("servers: %w", err)
			}
		}
	}
	// SIGTERM is PgBouncer's immediate shutdown.
	p, err := startProcess(b.LogPath(), cred, syscall.SIGTERM, bin, ini)
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, b.ping); err != nil {
		_ = p.kill(context.Background())
		return err
	}
	b.proc = p
	return nil
}

// ping runs SELECT 1 through b, over the simple protocol (no statement
// outlives the transaction).
func (b *PgBouncer) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.PgxDSN()+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "SELECT 1")
	return errors.Join(err, conn.Close(ctx))
}

// Addr returns host:port of PgBouncer's listener.
func (b *PgBouncer) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// PgxDSN returns a PostgreSQL URL of the test database through PgBouncer,
// with sslmode=disable and no other parameter.
func (b *PgBouncer) PgxDSN() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(b.User, b.Password), Host: b.Addr(),
		Path: "/" + b.Database, RawQuery: "sslmode=disable"}
	return u.String()
}

// LogPath is the file PgBouncer logs to.
func (b *PgBouncer) LogPath() string { return filepath.Join(b.dir, "pgbouncer.log") }

// Exited returns nil while PgBouncer runs, and an error with the tail of
// its log once it has exited on its own (PgBouncer 1.18.0 exits on a
// cancel request whose client went away first, its bug #801).
func (b *PgBouncer) Exited() error {
	select {
	case <-b.proc.done:
		return fmt.Errorf("servers: pgbouncer exited: %v%s", b.proc.waitErr, logTail(b.LogPath()))
	default:
		return nil
	}
}

// Stop stops PgBouncer and removes its directory; it reports a PgBouncer
// that had exited on its own.
func (b *PgBouncer) Stop(ctx context.Context) error {
	return errors.Join(b.proc.stop(ctx), os.RemoveAll(b.dir))
}
