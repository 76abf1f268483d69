package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const errNoPostgres = "integration: no Docker engine and no PostgreSQL server binaries (postgres, initdb) on PATH or in /usr/lib/postgresql/*/bin: " +
	"install postgresql (apt-get install -y --no-install-recommends postgresql) or start a Docker engine"

// StartPostgres starts a PostgreSQL server, in Docker if an engine answers
// and from the local binaries otherwise. The caller must Stop it.
func StartPostgres(ctx context.Context, opts ...Option) (*Server, error) {
	start := time.Now()
	o := newOptions(opts)
	docker, err := o.backendDocker()
	if err != nil {
		return nil, err
	}
	var s *Server
	if docker {
		s, err = startPostgresContainer(ctx, o)
	} else {
		s, err = startLocalPostgres(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	s.Startup = time.Since(start)
	return s, nil
}

// startLocalPostgres runs initdb and postgres in a new temporary directory
// owned by the server's OS user: the postgres user when we are root, since
// PostgreSQL refuses to run as root.
func startLocalPostgres(ctx context.Context, o options) (_ *Server, err error) {
	postgresBin, ok := findBinary("postgres", postgresDirs)
	if !ok {
		return nil, errors.New(errNoPostgres)
	}
	// initdb must match the server's version: take it from the real binary's directory.
	real, err := filepath.EvalSymlinks(postgresBin)
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	initdb, err := exec.LookPath(filepath.Join(filepath.Dir(real), "initdb"))
	if err != nil {
		return nil, errors.New(errNoPostgres)
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := makePostgresDir(cred)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()

	// The bootstrap superuser is the test user, as in the Docker image.
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(DefaultPassword+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	data, logPath := filepath.Join(dir, "data"), filepath.Join(dir, "postgres.log")
	if err := runTool(ctx, logPath, cred, initdb, "-D", data, "-U", DefaultUser, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, err
	}

	for attempt := 1; ; attempt++ {
		s, err := runPostgres(ctx, o, postgresBin, dir, data, logPath, cred)
		if err == nil || !errors.Is(err, errExited) || attempt == 3 {
			return s, err
		}
	}
}

// runPostgres starts postgres on a free port, waits until the test user can
// log in over TCP and creates the test database.
func runPostgres(ctx context.Context, o options, bin, dir, data, logPath string, cred *syscall.Credential) (*Server, error) {
	s, err := servePostgres(ctx, o, bin, dir, data, logPath, cred)
	if err != nil {
		return nil, err // dir is kept: the caller may retry in it
	}
	admin := *s.pgAdmin()
	conn, err := pgx.Connect(ctx, admin.PgxDSN())
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+DefaultDatabase)
		err = errors.Join(err, conn.Close(ctx))
	}
	if err != nil {
		_ = s.local.stop(ctx)
		return nil, fmt.Errorf("servers: postgres: create database: %w", err)
	}
	return s, nil
}

// servePostgres starts postgres on data, a data directory in dir, on a
// free port and waits until the test user can log in over TCP to database
// postgres, which every cluster has. Stop removes dir; on error dir is kept
// and nothing runs.
func servePostgres(ctx context.Context, o options, bin, dir, data, logPath string, cred *syscall.Credential) (*Server, error) {
	port, err := takePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Kind: KindPostgres, Backend: BackendLocal,
		Host: "127.0.0.1", Port: port,
		User: DefaultUser, Password: DefaultPassword, Database: DefaultDatabase,
		pg: &pgFiles{bin: bin, data: data, cred: cred, o: o},
	}
	admin := s.pgAdmin()
	l := &localServer{
		logPath: logPath,
		launch: func() (*process, error) {
			// SIGINT is PostgreSQL's fast shutdown: it disconnects clients.
			return startProcess(logPath, cred, syscall.SIGINT, bin, append([]string{
				"-D", data, "-k", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(port)},
				o.postgresSettings()...)...)
		},
		ready: func(ctx context.Context, p *process) error {
			return p.waitReady(ctx, func(ctx context.Context) error {
				conn, err := pgx.Connect(ctx, admin.PgxDSN())
				if err != nil {
					return err
				}
				var served string
				err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&served)
				return errors.Join(err, isOurs(served, data), conn.Close(ctx))
			})
		},
	}
	if err := l.run(ctx); err != nil {
		return nil, err
	}
	s.local = l
	s.stop = func(ctx context.Context) error {
		return errors.Join(l.stop(ctx), os.RemoveAll(dir))
	}
	return s, nil
}

// pgAdmin returns s's address and test user with database postgres, which
// exists from initdb on, before the test database.
func (s *Server) pgAdmin() *Server {
	return &Server{Kind: KindPostgres, Host: s.Host, Port: s.Port, User: DefaultUser, Password: DefaultPassword,
		Database: "postgres"}
}

// makePostgresDir makes the temporary directory of a local PostgreSQL
// server, owned by the server's OS user cred (nil: ourselves).
func makePostgresDir(cred *syscall.Credential) (string, error) {
	dir, err := makeDir(KindPostgres)
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("servers: %w", err)
		}
	}
	return dir, nil
}

// postgresCredential returns the credential of the postgres OS user when we
// are root, and nil (run as ourselves) otherwise.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("integration: running as root and PostgreSQL refuses root, but there is no postgres OS user: %v", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("servers: postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("servers: postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
