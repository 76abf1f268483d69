package respool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// fakePrimary is a loopback server that speaks enough PostgreSQL for the
// watch of the hosts: a startup without a password, and an answer to the
// question whether it takes writes (pgReadOnlyQuery), which readOnly sets.
type fakePrimary struct {
	addr     string
	readOnly atomic.Bool
	sessions atomic.Int32           // startups served
	app      atomic.Pointer[string] // the application_name of the last startup
	asked    atomic.Int32           // questions answered (after the answer is computed)
	shutdown atomic.Bool            // a simple query is answered as by a server shutting down (57P01), the session ended
	fatal    atomic.Pointer[string] // when set, a simple query is answered with this FATAL code, the session ended
	drop     atomic.Bool            // a simple query ends the session without a word
}

func startFakePrimary(t *testing.T, readOnly bool) *fakePrimary {
	t.Helper()
	s := &fakePrimary{}
	s.readOnly.Store(readOnly)
	s.addr = hungServer(t, s.serve)
	return s
}

func (s *fakePrimary) serve(c net.Conn) {
	be := pgproto3.NewBackend(c, c)
	msg, err := be.ReceiveStartupMessage()
	if err != nil {
		return
	}
	sm, ok := msg.(*pgproto3.StartupMessage)
	if !ok {
		return
	}
	app := sm.Parameters["application_name"]
	s.app.Store(&app)
	s.sessions.Add(1)
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.Parse:
			be.Send(&pgproto3.ParseComplete{})
		case *pgproto3.Bind:
			be.Send(&pgproto3.BindComplete{})
		case *pgproto3.Describe:
			be.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("ro"), DataTypeOID: 16, DataTypeSize: 1, TypeModifier: -1}}})
		case *pgproto3.Execute:
			v := map[bool]string{true: "t", false: "f"}[s.readOnly.Load()]
			s.asked.Add(1)
			be.Send(&pgproto3.DataRow{Values: [][]byte{[]byte(v)}})
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
		case *pgproto3.Sync:
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
		case *pgproto3.Query:
			if s.drop.Load() {
				_ = c.Close()
				return
			}
			if s.shutdown.Load() {
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to immediate shutdown command"})
				_ = be.Flush()
				return
			}
			if code := s.fatal.Load(); code != nil {
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: *code, Message: "terminating connection"})
				_ = be.Flush()
				return
			}
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("INSERT 0 1")})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
		case *pgproto3.Terminate:
			_ = c.Close() // the session ends, as the client waits to see
			return
		}
	}
}

func newTestWatch(t *testing.T, addrs ...string) *primaryWatch {
	t.Helper()
	w := newPrimaryWatch(Config{DriverName: "pgx", DSN: "postgres://u@" + strings.Join(addrs, ",") + "/db?sslmode=disable"},
		clock.System(), "test", slog.New(slog.DiscardHandler))
	if w == nil {
		t.Fatalf("no watch for the hosts %v", addrs)
	}
	t.Cleanup(w.close)
	return w
}

// waitAdmit waits, within 10s, until admit's answer satisfies ok.
func waitAdmit(t *testing.T, w *primaryWatch, what string, ok func(error) bool) error {
	t.Helper()
	var err error
	waitCond(t, what+" (admit: "+fmt.Sprint(w.admit())+")", func() bool { err = w.admit(); return ok(err) })
	return err
}

// waitCond waits, within 10s, polling, until cond holds.
func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not: %s", what)
		}
		<-tick.C
	}
}

func TestNewPrimaryWatchOnlyForSeveralPgxHosts(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want int // hosts watched; 0: no watch
	}{
		{"one host", Config{DriverName: "pgx", DSN: "postgres://u@a:5432/db"}, 0},
		{"the same host twice", Config{DriverName: "pgx", DSN: "postgres://u@a:5432,a:5432/db"}, 0},
		{"mysql", Config{DriverName: "mysql", DSN: "u@tcp(a:3306)/db"}, 0},
		{"two hosts", Config{DriverName: "pgx", DSN: "postgres://u@a:5432,b:5433/db?target_session_attrs=read-write"}, 2},
		{"three hosts, keyword form", Config{DriverName: "pgx/v5", DSN: "host=a,b,c port=1,2,3 user=u"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newPrimaryWatch(tc.cfg, clock.System(), "test", slog.New(slog.DiscardHandler))
			got := 0
			if w != nil {
				got = len(w.hosts)
				w.close()
			}
			if got != tc.want {
				t.Errorf("watches %d hosts; want %d", got, tc.want)
			}
		})
	}
}

func TestPreferHostDialsTheWritableHostFirst(t *testing.T) {
	cfg := func() *pgconn.Config {
		c, err := pgconn.ParseConfig("postgres://u@a:1,b:2,c:3/db")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	order := func(c *pgconn.Config) string {
		var hosts []string
		for _, e := range entries(c) { // sslmode=prefer: each host twice, with TLS and without
			if len(hosts) == 0 || hosts[len(hosts)-1] != e.Host {
				hosts = append(hosts, e.Host)
			}
		}
		return strings.Join(hosts, ",")
	}
	for _, tc := range []struct{ prefer, want string }{
		{"", "a,b,c"},
		{"a:1", "a,b,c"},
		{"b:2", "b,a,c"},
		{"c:3", "c,a,b"},
		{"d:4", "a,b,c"},
	} {
		c := cfg()
		ctx := context.Background()
		if tc.prefer != "" {
			ctx = context.WithValue(ctx, preferredHostKey{}, tc.prefer)
		}
		preferHost(ctx, c)
		if got := order(c); got != tc.want {
			t.Errorf("preferring %q: hosts %s; want %s", tc.prefer, got, tc.want)
		}
	}
}

// TestWatchRefusesAttemptsWhileNoHostTakesWrites: after a failed attempt,
// while one host refuses connections and the other answers that it is
// read-only, an attempt is refused at once, with an error naming both;
// once the second takes writes, attempts go on and dial it first, and
// found is called once; a failed attempt forgets it.
func TestWatchRefusesAttemptsWhileNoHostTakesWrites(t *testing.T) {
	standby := startFakePrimary(t, true)
	dead := closedAddr(t) // after the server: a port closedAddr frees could be the server's otherwise
	w := newTestWatch(t, dead, standby.addr)
	var found atomic.Int32
	w.found = func(bool) { found.Add(1) }
	if err := w.admit(); err != nil {
		t.Fatalf("admit before any failure: %v; want nil", err)
	}
	w.failed()
	err := waitAdmit(t, w, "both hosts known", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "unreachable") && strings.Contains(err.Error(), "read-only")
	})
	var re *resilience.RejectedError
	if !errors.Is(err, ErrNoWritableServer) || !errors.Is(err, resilience.ErrRejected) || !errors.As(err, &re) {
		t.Fatalf("admit: %v; want a *resilience.RejectedError matching ErrNoWritableServer", err)
	}
	if !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), standby.addr) || re.RetryAt.IsZero() {
		t.Errorf("admit: %v (retry at %v); want both hosts named and a time to retry", err, re.RetryAt)
	}
	if got := w.prefer(context.Background()).Value(preferredHostKey{}); got != nil {
		t.Errorf("preferred host %v while none takes writes; want none", got)
	}

	standby.readOnly.Store(false) // promoted
	waitAdmit(t, w, "nil once a host takes writes", func(err error) bool { return err == nil })
	if got := w.prefer(context.Background()).Value(preferredHostKey{}); got != standby.addr {
		t.Errorf("preferred host %v; want %s", got, standby.addr)
	}
	if n := found.Load(); n != 1 {
		t.Errorf("found called %d times; want 1", n)
	}
	if n := standby.sessions.Load(); n != 1 {
		t.Errorf("the watch opened %d sessions on the standby; want 1, asked again and again", n)
	}
	w.succeeded()
	if w.active() {
		t.Error("the watch goes on after an attempt succeeded")
	}
	if got := w.prefer(context.Background()).Value(preferredHostKey{}); got != standby.addr {
		t.Errorf("preferred host after the watch ended: %v; want %s still", got, standby.addr)
	}
	standby.readOnly.Store(true) // demoted: the new watch finds no host taking writes, and prefers none
	w.failed()
	if got := w.prefer(context.Background()).Value(preferredHostKey{}); got != nil {
		t.Errorf("preferred host after a failed attempt: %v; want none", got)
	}
}

// refusingServer is a loopback server that answers every startup with a
// FATAL error of code and message, and closes the connection.
func refusingServer(t *testing.T, code, message string) string {
	return hungServer(t, func(c net.Conn) {
		be := pgproto3.NewBackend(c, c)
		if _, err := be.ReceiveStartupMessage(); err == nil {
			be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: code, Message: message})
			_ = be.Flush()
		}
		_ = c.Close()
	})
}

// TestWatchLetsAttemptsThroughWhenAServerRefuses: a host that answers a
// connection with an error (authentication, too many connections) lets
// attempts go on, so that the caller and the breaker learn why.
func TestWatchLetsAttemptsThroughWhenAServerRefuses(t *testing.T) {
	refusing := refusingServer(t, "28P01", "password authentication failed")
	w := newTestWatch(t, closedAddr(t), refusing)
	w.found = func(bool) {}
	w.failed()
	waitAdmit(t, w, "nil: a server refused", func(err error) bool {
		return err == nil && hostState(w.hosts[1].state.Load()) == hostRefusing
	})
}

// TestWatchTakesAServerShuttingDownForUnreachable: a server that answers
// a connection with "the database system is shutting down" (57P03, as a
// primary stopping does for a moment) is not one that refuses (whose
// reason the attempts must learn): it is going away, and attempts stay
// refused while no other host takes writes.
func TestWatchTakesAServerShuttingDownForUnreachable(t *testing.T) {
	stopping := refusingServer(t, "57P03", "the database system is shutting down")
	standby := startFakePrimary(t, true)
	w := newTestWatch(t, stopping, standby.addr)
	w.found = func(bool) {}
	w.failed()
	err := waitAdmit(t, w, "both hosts known", func(err error) bool {
		return hostState(w.hosts[0].state.Load()) != hostUnseen && hostState(w.hosts[1].state.Load()) != hostUnseen
	})
	if s := hostState(w.hosts[0].state.Load()); s != hostUnreachable || !errors.Is(err, ErrNoWritableServer) {
		t.Errorf("a server shutting down: %v, admit %v; want unreachable, attempts refused", s, err)
	}
}

// TestWatchParksAConnectionOnAReadOnlyHost: while the watch sees a host
// read-only, it makes one connection to it that waits, connected and
// authenticated, until the host takes writes; then found is called and the
// next attempt takes that connection instead of dialing.
func TestWatchParksAConnectionOnAReadOnlyHost(t *testing.T) {
	standby := startFakePrimary(t, true)
	dead := closedAddr(t) // after the server: a port closedAddr frees could be the server's otherwise
	w := newTestWatch(t, dead, standby.addr)
	var found atomic.Int32
	w.found = func(bool) { found.Add(1) }
	cc, err := pgx.ParseConfig("postgres://u@" + dead + "," + standby.addr + "/db?sslmode=disable&target_session_attrs=any")
	if err != nil {
		t.Fatal(err)
	}
	w.dial = stdlib.GetConnector(*cc, stdlib.OptionBeforeConnect(func(ctx context.Context, cc *pgx.ConnConfig) error {
		parkOn(ctx, &cc.Config)
		return nil
	})).Connect
	w.failed()
	waitAdmit(t, w, "both hosts known", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "read-only") && strings.Contains(err.Error(), "unreachable")
	})
	waitCond(t, "the watch's session and the parked one on the standby", func() bool { return standby.sessions.Load() == 2 })
	if c := w.takeParked(context.Background()); c != nil {
		t.Fatal("a connection handed out while the host is read-only")
	}
	standby.readOnly.Store(false)
	waitAdmit(t, w, "nil once the host takes writes", func(err error) bool { return err == nil })
	var c driver.Conn
	waitCond(t, "the parked connection", func() bool { c = w.takeParked(context.Background()); return c != nil })
	defer c.Close()
	if n := standby.sessions.Load(); n != 2 || found.Load() != 1 {
		t.Errorf("%d sessions, found %d times; want 2 sessions (no new dial), found once", n, found.Load())
	}
}

// TestWatchSessionsTakeTheHook: the watch's own sessions are made on a
// copy of the host's config that Config.PgxBeforeConnect has had, as the
// pool's connections are (a rotated password, a fresh token): here an
// application_name the server sees.
func TestWatchSessionsTakeTheHook(t *testing.T) {
	standby := startFakePrimary(t, true)
	dead := closedAddr(t) // after the server: a port closedAddr frees could be the server's otherwise
	var hosts sync.Map
	cfg := Config{DriverName: "pgx", DSN: "postgres://u@" + dead + "," + standby.addr + "/db?sslmode=disable",
		PgxBeforeConnect: func(_ context.Context, cc *pgx.ConnConfig) error {
			_, addr := pgconn.NetworkAddress(cc.Host, cc.Port)
			hosts.Store(addr, len(cc.Fallbacks))
			cc.RuntimeParams["application_name"] = "hooked"
			return nil
		}}
	w := newPrimaryWatch(cfg, clock.System(), "test", slog.New(slog.DiscardHandler))
	t.Cleanup(w.close)
	w.found = func(bool) {}
	w.failed()
	waitAdmit(t, w, "both hosts known", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "read-only") && strings.Contains(err.Error(), "unreachable")
	})
	if app := standby.app.Load(); app == nil || *app != "hooked" {
		t.Errorf("the watch's session started with application_name %v; want the hook's", app)
	}
	for _, addr := range []string{dead, standby.addr} {
		if n, ok := hosts.Load(addr); !ok || n.(int) != 0 {
			t.Errorf("the hook for %s: called %v, with %v other hosts; want called, for that host alone", addr, ok, n)
		}
	}
}

// TestTakeParkedWaitsForTheParkedConnectionOfAWritableHost: an attempt
// that finds the parked connection still under way to a host the watch
// has found taking writes waits for it (it is connected and authenticated
// already, one question from ready), rather than dialing from nothing.
func TestTakeParkedWaitsForTheParkedConnectionOfAWritableHost(t *testing.T) {
	standby := startFakePrimary(t, true)
	dead := closedAddr(t) // after the server: a port closedAddr frees could be the server's otherwise
	clk := clocktest.New(time.Now())
	w := newPrimaryWatch(Config{DriverName: "pgx", DSN: "postgres://u@" + dead + "," + standby.addr + "/db?sslmode=disable"},
		clk, "test", slog.New(slog.DiscardHandler))
	t.Cleanup(w.close)
	w.found = func(bool) {}
	release := make(chan struct{})
	w.dial = func(ctx context.Context) (driver.Conn, error) {
		select {
		case <-release:
			return stubConn{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w.failed()
	waitCond(t, "a parked connection under way", func() bool { return w.parking.Load() != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitTimers(ctx, 2); err != nil { // each host's watch waits for its next look
		t.Fatal(err)
	}
	w.hosts[1].state.Store(int32(hostWritable)) // as the watch's next look would find it
	go func() {
		// takeParked's wait is its one timer beside the watch's two.
		if clk.WaitTimers(ctx, 3) == nil {
			close(release)
		}
	}()
	c := w.takeParked(ctx)
	if c == nil {
		t.Fatalf("takeParked returned no connection while the parked one to a writable host was under way (%v); want it waited for", ctx.Err())
	}
}

type stubConn struct{ driver.Conn }

func (stubConn) Close() error { return nil }

// TestParkedConnectionAsksAtOnceWhenAHostIsFound: the parked connection's
// wait asks its server again the moment the watch finds a host taking
// writes, not at its next tick.
func TestParkedConnectionAsksAtOnceWhenAHostIsFound(t *testing.T) {
	standby := startFakePrimary(t, true)
	clk := clocktest.New(time.Now())
	found := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := pgconn.ParseConfig("postgres://u@" + standby.addr + "/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	parkOn(context.WithValue(ctx, parkedHostKey{}, parkedHost{addr: standby.addr, clock: clk, found: found}), cc)
	done := make(chan error, 1)
	go func() {
		pc, err := pgconn.ConnectConfig(ctx, cc)
		if err == nil {
			_ = pc.Close(context.Background())
		}
		done <- err
	}()
	waitCond(t, "the wait's first question answered read-only", func() bool { return standby.asked.Load() > 0 })
	standby.readOnly.Store(false)
	close(found) // the clock does not move: no tick comes
	if err := <-done; err != nil {
		t.Fatalf("the parked connection: %v; want it made once the host was found taking writes", err)
	}
}

// writeOnFakePrimary opens a Connector for writes on primary and a dead
// host listed after it, and writes once through it: its pool then holds
// one idle connection. The *sql.DB closes when t ends; ctx ends 10s later.
func writeOnFakePrimary(t *testing.T, primary *fakePrimary) (*Connector, *sql.DB, context.Context) {
	t.Helper()
	c, err := NewConnector(Config{DriverName: "pgx", DSN: "postgres://u@" + primary.addr + "," + closedAddr(t) + "/db?sslmode=disable"})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	return c, db, ctx
}

// TestLostConnectionStartsTheWatch: a statement whose connection was lost
// (the server shutting down: 57P01 from pg_ctl stop or a crash's -m
// immediate; or the socket closed without a word) starts the watch of the
// hosts at once, so that the pool's new connections wait for its first
// look rather than each dialing every host of the DSN.
func TestLostConnectionStartsTheWatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*fakePrimary)
	}{
		{"57P01", func(s *fakePrimary) { s.shutdown.Store(true) }},
		{"dropped", func(s *fakePrimary) { s.drop.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := startFakePrimary(t, false)
			c, db, ctx := writeOnFakePrimary(t, primary)
			if c.watch == nil || c.watch.active() {
				t.Fatalf("watch %v, active before any failure", c.watch)
			}
			tc.end(primary)
			if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err == nil {
				t.Fatal("a statement on a lost connection succeeded")
			}
			if !c.watch.active() {
				t.Error("no watch after a statement whose connection was lost; want one started at once")
			}
		})
	}
	// A session the server ended alone, on a server that is there, is not
	// a lost server: no watch, whose first look would refuse attempts.
	for _, code := range []string{"57P05", "25P03", "57P04"} {
		t.Run(code+" starts none", func(t *testing.T) {
			primary := startFakePrimary(t, false)
			c, db, ctx := writeOnFakePrimary(t, primary)
			primary.fatal.Store(&code)
			if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err == nil {
				t.Fatal("a statement on an ended session succeeded")
			}
			if c.watch.active() {
				t.Errorf("a watch after %s (the session ended, the server there); want none", code)
			}
		})
	}
}

// TestWritableFoundEndsThePauseAndTheBreakersOpenSpell: a server found
// taking writes after none did is a new server: neither the breaker's
// open spell nor the pause (back-pressure) that the old one caused holds
// connection attempts to it back; each lets one attempt through at once,
// as its probe.
func TestWritableFoundEndsThePauseAndTheBreakersOpenSpell(t *testing.T) {
	c, err := NewConnector(Config{DriverName: "pgx", DSN: "postgres://u@" + closedAddr(t) + "," + closedAddr(t) + "/db?sslmode=disable"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.guard.Pause().Hold(time.Hour, errors.New("too many connections"))
	if err := c.guard.Breaker().TransitionTo(breaker.Open); err != nil {
		t.Fatal(err)
	}
	c.writableFound(false)
	if s := c.guard.Pause().State(); s.Holding() {
		t.Errorf("pause after a new writable server was found: %+v; want its probe let through", s)
	}
	if s := c.guard.Breaker().State(); s != breaker.HalfOpen {
		t.Errorf("breaker after a new writable server was found: %v; want half-open", s)
	}
}

// TestWritableFoundAfterRefusalsResetsThePool: when the watch refused
// attempts (no listed server took writes for a while) and then finds one
// that does, the connections the pool still holds are to the servers that
// took none: the pool is reset (idle ones closed at once), and
// back-pressure from those servers ends. When it refused none (a lost
// connection on a primary that is well), the pool is left alone.
func TestWritableFoundAfterRefusalsResetsThePool(t *testing.T) {
	c, db, ctx := writeOnFakePrimary(t, startFakePrimary(t, false))
	c.writableFound(false)
	// Reset returns before the actor acts, but no connection made before it
	// is handed out after it: a statement now would need a second one.
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if s := c.pool.Stats(); s.Creates != 1 || s.Destroys.Reset != 0 {
		t.Fatalf("after a server was found with no attempt refused: %d connections made, %d reset; want 1, 0", s.Creates, s.Destroys.Reset)
	}
	c.writableFound(true)
	waitCond(t, "the idle connection closed by a Reset", func() bool { s := c.pool.Stats(); return s.Destroys.Reset == 1 && s.Idle == 0 })
}
