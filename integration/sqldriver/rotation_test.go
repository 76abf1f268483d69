package sqldriver

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/resilience/breaker"
)

// The rotation test's load: 8 goroutines a client, pools of 4, connections
// that live 100ms so that new ones are dialed all along.
const (
	rotWorkers  = 8
	rotMaxConns = 4
	rotLifetime = 100 * time.Millisecond
	rotBound    = 30 * time.Second // the whole test's bound
)

// rotUser creates a login of its own on s with password pw (the shared test
// user stays as it is), dropped when the test ends, and returns s as that
// user, and the admin connection that rotates its password.
func rotUser(t *testing.T, ctx context.Context, s *servers.Server, pw string) (*servers.Server, *sql.DB) {
	t.Helper()
	if s.AdminDSN() == "" {
		t.Skip("no admin connection (MariaDB in Docker)")
	}
	admin := openOne(t, s.DriverName(), s.AdminDSN())
	user := fmt.Sprintf("rot_%d", time.Now().UnixNano()%1e9)
	var stmts, drop []string
	if s.Kind == servers.KindPostgres {
		stmts = []string{fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", user, pw),
			fmt.Sprintf("GRANT ALL ON DATABASE %s TO %s", s.Database, user)}
		drop = []string{fmt.Sprintf("DROP OWNED BY %s", user), fmt.Sprintf("DROP ROLE %s", user)}
	} else {
		stmts = []string{fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, pw),
			fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%%'", s.Database, user)}
		drop = []string{fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user)}
	}
	for _, q := range stmts {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if s.Kind == servers.KindPostgres { // end the sessions still open, then drop
			_, _ = admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", user)
		}
		for _, q := range drop {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return &servers.Server{Kind: s.Kind, Backend: s.Backend, Host: s.Host, Port: s.Port,
		User: user, Password: pw, Database: s.Database}, admin
}

// rotatePassword sets user's password to pw.
func rotatePassword(ctx context.Context, admin *sql.DB, s *servers.Server, pw string) error {
	q := fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", s.User, pw)
	if s.Kind != servers.KindPostgres {
		q = fmt.Sprintf("ALTER USER '%s'@'%%' IDENTIFIED BY '%s'", s.User, pw)
	}
	_, err := admin.ExecContext(ctx, q)
	return err
}

// rotClient is one client of the rotation test and its tally.
type rotClient struct {
	name   string
	db     *sql.DB
	dials  atomic.Int64 // connection attempts (hook calls; respool: its pool's creations)
	ok     atomic.Int64
	failed atomic.Int64
	after  atomic.Int64 // dials counted after the rotation

	mu    sync.Mutex
	first error // the first failure
}

// load runs rotWorkers goroutines of SELECT 1 on c until stop is closed.
func (c *rotClient) load(ctx context.Context, stop <-chan struct{}, wg *sync.WaitGroup) {
	for range rotWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				var n int
				err := c.db.QueryRowContext(qctx, "SELECT 1").Scan(&n)
				cancel()
				if err != nil {
					c.failed.Add(1)
					c.mu.Lock()
					if c.first == nil {
						c.first = err
					}
					c.mu.Unlock()
					continue
				}
				c.ok.Add(1)
			}
		}()
	}
}

// TestPasswordRotationUnderLoad is issue 16 item 4: the password of the
// user is rotated with ALTER USER while 8 goroutines a client query
// without pause through pools of 4 whose connections live 100ms. The hook
// (respool's PgxBeforeConnect or MySQLBeforeConnect, pgx stdlib's
// OptionBeforeConnect, go-sql-driver/mysql's BeforeConnect) returns the
// current secret, which the test switches right after ALTER USER. respool
// fails no query: a dial that read the old secret and reached the server
// after the ALTER is refused, made once more after the retry's delay, and
// the hook then gives the new one. A session opened before the rotation
// lives on (same backend), and the dials after the rotation succeed with
// the new secret. Beside it, in the same run: the plain driver with a
// static DSN (every dial after the rotation fails: counted) and with its
// own hook (no retry: a dial caught in the switch fails its query;
// reported, not asserted).
func TestPasswordRotationUnderLoad(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), rotBound)
		defer cancel()
		const oldPw, newPw = "rotOld-Zq9xK7vW", "rotNew-Yp8wJ6uV"
		u, admin := rotUser(t, ctx, s, oldPw)
		var secret atomic.Value // string: what the hooks return
		secret.Store(oldPw)
		current := func() string { return secret.Load().(string) }

		respoolC := &rotClient{name: "respool (hook)"}
		plainHook := &rotClient{name: s.DriverName() + " stdlib (hook)"}
		plainStatic := &rotClient{name: s.DriverName() + " (static DSN)"}
		logs := &lockedBuffer{}
		cfg, err := respool.ParseDSN(u.DSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Pool.MaxObjects, cfg.Pool.MaxLifetime = rotMaxConns, rotLifetime
		cfg.Pool.Logger = slog.New(slog.NewTextHandler(logs, nil))
		var rotated atomic.Bool
		counted := func(c *rotClient) {
			c.dials.Add(1)
			if rotated.Load() {
				c.after.Add(1)
			}
		}
		var plainConnector driver.Connector
		if s.Kind == servers.KindPostgres {
			cfg.PgxBeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
				counted(respoolC)
				cc.Password = current()
				return nil
			}
			cc, err := pgx.ParseConfig(u.DSN())
			if err != nil {
				t.Fatal(err)
			}
			plainConnector = stdlib.GetConnector(*cc, stdlib.OptionBeforeConnect(func(_ context.Context, cc *pgx.ConnConfig) error {
				counted(plainHook)
				cc.Password = current()
				return nil
			}))
		} else {
			cfg.MySQLBeforeConnect = func(_ context.Context, mc *mysql.Config) error {
				counted(respoolC)
				mc.Passwd = current()
				return nil
			}
			mc, err := mysql.ParseDSN(u.DSN())
			if err != nil {
				t.Fatal(err)
			}
			if err := mc.Apply(mysql.BeforeConnect(func(_ context.Context, mc *mysql.Config) error {
				counted(plainHook)
				mc.Passwd = current()
				return nil
			})); err != nil {
				t.Fatal(err)
			}
			if plainConnector, err = mysql.NewConnector(mc); err != nil {
				t.Fatal(err)
			}
		}
		c, err := respool.NewConnector(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		respoolC.db = sql.OpenDB(c)
		plainHook.db = sql.OpenDB(plainConnector)
		static, err := sql.Open(s.DriverName(), u.DSN())
		if err != nil {
			t.Fatal(err)
		}
		plainStatic.db = static
		clients := []*rotClient{respoolC, plainHook, plainStatic}
		for _, cl := range clients[1:] {
			cl.db.SetMaxOpenConns(rotMaxConns)
			cl.db.SetMaxIdleConns(rotMaxConns)
			cl.db.SetConnMaxLifetime(rotLifetime)
		}
		for _, cl := range clients {
			t.Cleanup(func() { _ = cl.db.Close() })
		}

		// A session opened before the rotation, kept through it.
		pinned, err := respoolC.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer pinned.Close()
		sessionQuery := "SELECT pg_backend_pid()"
		if s.Kind != servers.KindPostgres {
			sessionQuery = "SELECT CONNECTION_ID()"
		}
		var before, after int64
		if err := pinned.QueryRowContext(ctx, sessionQuery).Scan(&before); err != nil {
			t.Fatal(err)
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, cl := range clients {
			cl.load(ctx, stop, &wg)
		}
		stopped := false
		stopLoad := func() {
			if !stopped {
				stopped = true
				close(stop)
				wg.Wait()
			}
		}
		defer stopLoad()
		// Until every client has redialed (its connections expired) under load.
		await(t, ctx, "every client dialing under load", func() bool {
			return respoolC.dials.Load() >= 2*rotMaxConns && plainHook.dials.Load() >= 2*rotMaxConns && plainStatic.ok.Load() >= 100
		})

		rotated.Store(true)
		if err := rotatePassword(ctx, admin, u, newPw); err != nil {
			t.Fatal(err)
		}
		secret.Store(newPw)
		rotatedAt := time.Now()
		// Until the hooked clients have dialed 3 pools' worth with the new
		// secret, and the static DSN has met the new password.
		await(t, ctx, "new dials after the rotation", func() bool {
			return respoolC.after.Load() >= 3*rotMaxConns && plainHook.after.Load() >= 3*rotMaxConns && plainStatic.failed.Load() > 0
		})
		stopLoad()
		if err := pinned.QueryRowContext(ctx, sessionQuery).Scan(&after); err != nil || after != before {
			t.Errorf("the session opened before the rotation: %v, backend %d then %d; want it alive, the same", err, before, after)
		}

		for _, cl := range clients {
			t.Logf("%-28s %6d queries, %4d failed, %3d dials (%d after the rotation); first failure: %v",
				cl.name, cl.ok.Load()+cl.failed.Load(), cl.failed.Load(), cl.dials.Load(), cl.after.Load(), cl.first)
		}
		t.Logf("rotation to the end of the run: %v", time.Since(rotatedAt).Round(time.Millisecond))
		if n := respoolC.failed.Load(); n != 0 {
			t.Errorf("respool: %d failed queries across the rotation; want 0 (first: %v)", n, respoolC.first)
		}
		if st := c.Stats(); st.Creates < uint64(respoolC.after.Load()) {
			t.Errorf("respool made %d connections, fewer than the %d dials after the rotation", st.Creates, respoolC.after.Load())
		}
		if plainStatic.failed.Load() == 0 {
			t.Errorf("%s: no failure; the rotation did not reach its dials", plainStatic.name)
		}
		for _, secret := range []string{oldPw, newPw} {
			if strings.Contains(logs.String()+fmt.Sprint(respoolC.first), secret) {
				t.Errorf("respool's log or error shows a password")
			}
		}
	})
}

// TestWrongPasswordOpensTheCircuit: a wrong password in the DSN makes one
// attempt at the server (counted at a proxy in front of it), not one per
// caller: its caller gets the driver's own error (err.(*mysql.MySQLError)
// holds, as with mysql), the circuit opens at once, and 8 callers after it
// fail fast with the breaker's rejection, without a dial; respool's one
// log line names the user and the server; nothing shows the password.
func TestWrongPasswordOpensTheCircuit(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		proxy, err := servers.StartProxy(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		via := proxy.Server(s)
		const wrongPw = "Xo7vH5tU0gRw"
		via.Password = wrongPw
		cfg, err := respool.ParseDSN(via.DSN())
		if err != nil {
			t.Fatal(err)
		}
		logs := &lockedBuffer{}
		cfg.Pool.MaxObjects = 4
		cfg.Pool.Logger = slog.New(slog.NewTextHandler(logs, nil))
		c, err := respool.NewConnector(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		t.Cleanup(func() { _ = db.Close() })

		// The caller whose attempt the server refused gets the real
		// driver's own error, as with the plain driver.
		first := db.PingContext(ctx)
		var pgErr *pgconn.PgError
		if me, ok := first.(*mysql.MySQLError); !(ok && me.Number == 1045) && !(errors.As(first, &pgErr) && pgErr.Code == "28P01") {
			t.Fatalf("Ping: %#v; want the driver's own refusal", first)
		}
		errs := make(chan error, 8)
		for range 8 {
			go func() { errs <- db.PingContext(ctx) }()
		}
		var refused error
		for range 8 {
			err := <-errs
			if !errors.Is(err, breaker.ErrOpen) {
				t.Errorf("Ping while open: %v; want the breaker's rejection", err)
			}
			refused = err
		}
		if n := proxy.Accepted(); n != 1 {
			t.Errorf("%d connections reached the server for 9 Pings; want 1", n)
		}
		log := logs.String()
		for _, want := range []string{"refused the credentials of user", s.User, via.Addr()} {
			if !strings.Contains(log, want) {
				t.Errorf("the log does not name %s:\n%s", want, log)
			}
		}
		if n := strings.Count(log, "circuit opened: the server refused the credentials"); n != 1 {
			t.Errorf("%d log lines of the refusal; want 1:\n%s", n, log)
		}
		for what, out := range map[string]string{"error": fmt.Sprintf("%+v", refused), "first error": fmt.Sprintf("%+v", first), "log": log} {
			if strings.Contains(out, wrongPw) {
				t.Errorf("the %s shows the password: %s", what, out)
			}
		}
		t.Logf("error: %v", refused)
	})
}

// await waits until cond holds, polling; it fails the test when ctx ends
// first.
func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
