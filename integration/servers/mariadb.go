package servers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

const errNoMariaDB = "integration: no Docker engine and no mariadbd and mariadb-install-db on PATH or in /usr/sbin, /usr/bin: " +
	"install mariadb-server (scripts/ensure-mariadb.sh, or apt-get install -y --no-install-recommends mariadb-server) or start a Docker engine"

// mariadbTuning makes MariaDB small and fast, trading durability for speed.
var mariadbTuning = []string{
	"--skip-log-bin",
	"--innodb-buffer-pool-size=16M",
	"--innodb-log-file-size=8M",
	"--innodb-flush-log-at-trx-commit=0",
	"--innodb-doublewrite=0",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_general_ci",
}

// mariadbInitSQL creates the test user and database during bootstrap.
// FLUSH PRIVILEGES loads the grant tables, which bootstrap mode skips.
var mariadbInitSQL = fmt.Sprintf(`FLUSH PRIVILEGES;
CREATE DATABASE %[1]s;
CREATE USER '%[2]s'@'%%' IDENTIFIED BY '%[3]s';
GRANT ALL ON %[1]s.* TO '%[2]s'@'%%';
`, DefaultDatabase, DefaultUser, DefaultPassword)

// StartMariaDB starts a MariaDB server, in Docker if an engine answers and
// from the local binaries otherwise. The caller must Stop it.
func StartMariaDB(ctx context.Context, opts ...Option) (*Server, error) {
	start := time.Now()
	o := newOptions(opts)
	docker, err := o.backendDocker()
	if err != nil {
		return nil, err
	}
	var s *Server
	if docker {
		s, err = startMariaDBContainer(ctx, o)
	} else {
		// mariadb-install-db has been seen to fail now and then when several
		// servers start at once (parallel test packages); a fresh directory
		// succeeds. Each failure's log is in the final error.
		var errs []error
		for attempt := 1; attempt <= 3; attempt++ {
			if s, err = startLocalMariaDB(ctx, o); err == nil || ctx.Err() != nil || err.Error() == errNoMariaDB {
				break
			}
			errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
		}
		if err != nil && len(errs) > 0 {
			err = errors.Join(errs...)
		}
	}
	if err != nil {
		return nil, err
	}
	s.Startup = time.Since(start)
	return s, nil
}

// startLocalMariaDB runs mariadb-install-db and mariadbd as ourselves in a
// new temporary directory.
func startLocalMariaDB(ctx context.Context, o options) (_ *Server, err error) {
	mariadbd, ok := findBinary("mariadbd", mariadbDirs)
	if !ok {
		return nil, errors.New(errNoMariaDB)
	}
	installDB, ok := findBinary("mariadb-install-db", mariadbDirs)
	if !ok {
		return nil, errors.New(errNoMariaDB)
	}
	dir, err := makeDir(KindMariaDB)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()

	// mariadbd refuses to run as root unless told to.
	var asUser []string
	if os.Geteuid() == 0 {
		if u, err := user.Current(); err == nil {
			asUser = []string{"--user=" + u.Username}
		}
	}
	data, logPath := filepath.Join(dir, "data"), filepath.Join(dir, "mariadb.log")
	initSQL := filepath.Join(dir, "init.sql")
	if err := os.WriteFile(initSQL, []byte(mariadbInitSQL), 0o644); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	// --no-defaults must come first; other flags pass through to mariadbd.
	args := append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve", "--extra-file=" + initSQL, "--tmpdir=" + dir}, asUser...)
	if err := runTool(ctx, logPath, nil, installDB, append(args, o.mariadbSettings()...)...); err != nil {
		return nil, err
	}

	for attempt := 1; ; attempt++ {
		s, err := runMariaDB(ctx, o, mariadbd, dir, data, logPath, asUser)
		if err == nil || !errors.Is(err, errExited) || attempt == 3 {
			return s, err
		}
	}
}

// runMariaDB starts mariadbd on a free port and waits until the test user
// can log in over TCP.
func runMariaDB(ctx context.Context, o options, bin, dir, data, logPath string, asUser []string) (*Server, error) {
	port, err := takePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Kind: KindMariaDB, Backend: BackendLocal,
		Host: "127.0.0.1", Port: port,
		User: DefaultUser, Password: DefaultPassword, Database: DefaultDatabase,
	}
	cfg, err := mysql.ParseDSN(s.MySQLDSN())
	if err != nil {
		return nil, fmt.Errorf("servers: mariadb: %w", err)
	}
	cfg.Timeout = time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("servers: mariadb: %w", err)
	}
	socket := filepath.Join(dir, "mariadb.sock")
	root := mysql.NewConfig() // mariadb-install-db made root@localhost without a password
	root.User, root.Net, root.Addr = "root", "unix", socket
	s.adminDSN = root.FormatDSN()
	args := append([]string{"--no-defaults", "--datadir=" + data,
		"--socket=" + socket, "--pid-file=" + filepath.Join(dir, "mariadb.pid"),
		"--tmpdir=" + dir, "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--skip-name-resolve", "--performance-schema=OFF"}, asUser...)
	l := &localServer{
		logPath: logPath,
		launch: func() (*process, error) {
			return startProcess(logPath, nil, syscall.SIGTERM, bin, append(args, o.mariadbSettings()...)...)
		},
		ready: func(ctx context.Context, p *process) error {
			return p.waitReady(ctx, func(ctx context.Context) error {
				db := sql.OpenDB(connector)
				defer db.Close()
				var served string
				if err := db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&served); err != nil {
					return err
				}
				return isOurs(served, data)
			})
		},
	}
	if err := l.run(ctx); err != nil {
		return nil, err // dir is kept: the caller may retry in it
	}
	s.local = l
	s.stop = func(ctx context.Context) error {
		return errors.Join(l.stop(ctx), os.RemoveAll(dir))
	}
	return s, nil
}
