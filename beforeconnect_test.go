package respool

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/respool/respool/internal/testctx"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
)

// refusingPG listens on loopback as a PostgreSQL server that answers every
// startup message with a FATAL 28P01 for its user, and counts the
// connections it accepted.
type refusingPG struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func newRefusingPG(t *testing.T) *refusingPG {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &refusingPG{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(testctx.Bound))
				be := pgproto3.NewBackend(c, c)
				msg, err := be.ReceiveStartupMessage()
				if err != nil {
					return
				}
				user := ""
				if sm, ok := msg.(*pgproto3.StartupMessage); ok {
					user = sm.Parameters["user"]
				}
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01",
					Message: fmt.Sprintf("password authentication failed for user %q", user)})
				_ = be.Flush()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *refusingPG) dsn(password string) string {
	return fmt.Sprintf("postgres://app:%s@%s/app?sslmode=disable", password, s.ln.Addr())
}

type callerKey struct{}

// TestPgxBeforeConnectPerAttempt: the hook runs before each attempt with
// the caller's context values, on a copy of the parsed config of its own
// (a change to a map does not reach the next attempt); the password it
// sets is what the server sees, and the server's refusal is tried again
// within the retry's 3 attempts, the hook asked each time, then opens the
// circuit: the next query fails
// fast, without a hook call or a dial. The error names the user and the
// address, and shows neither the DSN's password nor the hook's, even when
// the hook's own error quotes it.
func TestPgxBeforeConnectPerAttempt(t *testing.T) {
	s := newRefusingPG(t)
	var (
		mu     sync.Mutex
		calls  int
		values []any
		leaked bool
	)
	hookSecret := "Zq9xK7vW2jT"
	logs := &syncWriter{w: new(bytes.Buffer)}
	cfg := Config{DriverName: "pgx", DSN: s.dsn("Yp8wJ6uV1hS"),
		Pool: pool0(slog.New(slog.NewTextHandler(logs, nil))),
		PgxBeforeConnect: func(ctx context.Context, cc *pgx.ConnConfig) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			values = append(values, ctx.Value(callerKey{}))
			if cc.RuntimeParams["set_by_hook"] != "" {
				leaked = true
			}
			cc.RuntimeParams["set_by_hook"] = "1"
			cc.Password = hookSecret
			return nil
		}}
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()

	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), callerKey{}, "caller"), testctx.Bound)
	defer cancel()
	err = db.PingContext(ctx)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Fatalf("Ping: %v; want the server's 28P01, as pgx returns it", err)
	}
	mu.Lock()
	if calls != 3 || s.accepted.Load() != 3 || leaked || values[0] != "caller" || values[2] != "caller" {
		t.Fatalf("%d hook calls, %d dials, a change seen by the next attempt: %v, context values %v; want 3, 3, false, the caller's",
			calls, s.accepted.Load(), leaked, values)
	}
	mu.Unlock()
	if st := c.ResilienceStats().Breaker.State; st != breaker.Open {
		t.Fatalf("breaker %v; want open", st)
	}
	if err := db.PingContext(ctx); !errors.Is(err, breaker.ErrOpen) || calls != 3 || s.accepted.Load() != 3 {
		t.Fatalf("Ping while open: %v after %d hook calls, %d dials; want a fast failure, none more", err, calls, s.accepted.Load())
	}
	log := logs.String()
	if n := strings.Count(log, "circuit opened"); n != 1 || !strings.Contains(log, "level=ERROR msg=\"circuit opened: the server refused the credentials\"") {
		t.Errorf("log: %d lines of the circuit opening, want one at ERROR naming the refusal:\n%s", n, log)
	}
	for _, want := range []string{"refused the credentials of user", "app", s.ln.Addr().String()} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not name %s:\n%s", want, log)
		}
	}
	for what, out := range map[string]string{"error": fmt.Sprintf("%+v %#v", err, err), "log": log} {
		for _, secret := range []string{hookSecret, "Yp8wJ6uV1hS"} {
			if f := fragmentOf(out, secret); f != "" {
				t.Errorf("%s shows %q of the password %q: %s", what, f, secret, out)
			}
		}
	}
}

// pool0 is a pool's config for a unit test: one connection, a logger.
func pool0(l *slog.Logger) pool.Config { return pool.Config{MaxObjects: 1, Logger: l} }

// TestWrongPasswordOpensTheCircuitAfterOneAttempt: without a hook, a
// password the server refuses is not tried again: one dial, the circuit
// open, the callers after it failed fast; the first gets pgx's own error;
// no error shows the password.
func TestWrongPasswordOpensTheCircuitAfterOneAttempt(t *testing.T) {
	s := newRefusingPG(t)
	c, err := NewConnector(Config{DriverName: "pgx", DSN: s.dsn("Xo7vH5tU0gR"), Pool: pool0(testLogger(t))})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testctx.Bound)
	defer cancel()
	for i := range 5 {
		err := db.PingContext(ctx)
		var pgErr *pgconn.PgError
		if i == 0 && !(errors.As(err, &pgErr) && pgErr.Code == "28P01") || i > 0 && !errors.Is(err, breaker.ErrOpen) || s.accepted.Load() != 1 {
			t.Fatalf("Ping %d: %v after %d dials; want pgx's 28P01 from the one dial, then the circuit open", i, err, s.accepted.Load())
		}
		if f := fragmentOf(fmt.Sprintf("%+v", err), "Xo7vH5tU0gR"); f != "" {
			t.Fatalf("error %q shows %q of the password", err, f)
		}
	}
}

// TestBeforeConnectHookForItsDriverOnly: a hook set for another driver,
// or beside a Connector, is refused by name; a hook with a DSN its driver
// cannot parse too, without showing the password.
func TestBeforeConnectHookForItsDriverOnly(t *testing.T) {
	pgxHook := func(context.Context, *pgx.ConnConfig) error { return nil }
	mysqlHook := func(context.Context, *mysql.Config) error { return nil }
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{DriverName: "mysql", DSN: "u:p@tcp(h)/db", PgxBeforeConnect: pgxHook}, `PgxBeforeConnect is set, for DriverName "pgx"; DriverName is "mysql"`},
		{Config{DriverName: "pgx", DSN: "postgres://h/db", MySQLBeforeConnect: mysqlHook}, `MySQLBeforeConnect is set, for DriverName "mysql"; DriverName is "pgx"`},
		{Config{Connector: memConnector{}, PgxBeforeConnect: pgxHook}, "PgxBeforeConnect is set with a Connector"},
		{Config{DriverName: "pgx", DSN: "postgres://u:S3cretPw@h:notaport/db", PgxBeforeConnect: pgxHook}, "DSN (for the BeforeConnect hook)"},
	} {
		_, err := NewConnector(tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "S3cretPw") {
			t.Errorf("NewConnector(%v): %v; want ErrInvalidConfig saying %q", tc.cfg, err, tc.want)
		}
	}
}
