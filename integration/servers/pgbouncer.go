package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is a pgbouncer the harness runs on a loopback port in front of
// a PostgreSQL server's test database, in transaction pooling mode unless
// told otherwise. Install it with apt (package pgbouncer).
type PgBouncer struct {
	Host string
	Port int

	target *Server
	dir    string
	proc   *process
}

// StartPgBouncer starts pgbouncer on a free loopback port in front of pg
// (pool_mode = transaction) and waits until the test user can run a query
// through it, within ctx. settings are more "key = value" lines of its
// [pgbouncer] section, which override the defaults (e.g.
// "max_db_connections = 20"). The caller must Stop it.
func StartPgBouncer(ctx context.Context, pg *Server, settings ...string) (*PgBouncer, error) {
	if pg.Kind != KindPostgres {
		return nil, fmt.Errorf("servers: pgbouncer in front of %s: want a PostgreSQL server", pg.Kind)
	}
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/pgbouncer"); err != nil {
			return nil, errors.New("servers: pgbouncer not found: apt-get install -y --no-install-recommends pgbouncer")
		}
	}
	cred, err := postgresCredential() // pgbouncer refuses to run as root
	if err != nil {
		return nil, err
	}
	dir, err := makePostgresDir(cred)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ { // another process may take the port first: pgbouncer exits
		b, err := runPgBouncer(ctx, bin, dir, cred, pg, settings)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errExited) || attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// runPgBouncer writes pgbouncer's files in dir and starts it on a free port.
func runPgBouncer(ctx context.Context, bin, dir string, cred *syscall.Credential, pg *Server, settings []string) (*PgBouncer, error) {
	port, err := takePort()
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{Host: "127.0.0.1", Port: port, target: pg, dir: dir}
	userlist := filepath.Join(dir, "userlist.txt")
	ini := filepath.Join(dir, "pgbouncer.ini")
	conf := fmt.Sprintf(`[databases]
%s = host=%s port=%d dbname=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = scram-sha-256
auth_file = %s
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
%s
`, pg.Database, pg.Host, pg.Port, pg.Database, port, userlist, strings.Join(settings, "\n"))
	files := map[string]string{ini: conf, userlist: fmt.Sprintf("%q %q\n", pg.User, pg.Password)}
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return nil, fmt.Errorf("servers: %w", err)
		}
	}
	p, err := startProcess(filepath.Join(dir, "pgbouncer.log"), cred, syscall.SIGTERM, bin, ini) // SIGTERM: immediate shutdown
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx, b.query); err != nil {
		_ = p.kill(context.Background())
		return nil, err
	}
	b.proc = p
	return b, nil
}

// query runs SELECT 1 through pgbouncer (simple protocol: no statement
// outlives its transaction).
func (b *PgBouncer) query(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.Server().PgxDSN()+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "SELECT 1")
	return errors.Join(err, conn.Close(ctx))
}

// Addr returns pgbouncer's host:port.
func (b *PgBouncer) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// Server returns a Server like the PostgreSQL server behind pgbouncer that
// is reached through it. Its Stop and Restart do nothing.
func (b *PgBouncer) Server() *Server {
	return &Server{Kind: KindPostgres, Backend: BackendLocal, Host: b.Host, Port: b.Port,
		User: b.target.User, Password: b.target.Password, Database: b.target.Database}
}

// LogPath returns the path of pgbouncer's log; Stop removes it.
func (b *PgBouncer) LogPath() string { return filepath.Join(b.dir, "pgbouncer.log") }

// Stop stops pgbouncer (its server connections close) and removes its
// directory.
func (b *PgBouncer) Stop(ctx context.Context) error {
	var err error
	if b.proc != nil {
		err = b.proc.stop(ctx)
		b.proc = nil
	}
	return errors.Join(err, os.RemoveAll(b.dir))
}
