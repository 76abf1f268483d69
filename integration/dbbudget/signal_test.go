package dbbudget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/internal/logtest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
)

// fullUser is a PostgreSQL user allowed one session (CONNECTION LIMIT 1,
// set by the test that uses it): its second login is refused with 53300,
// the server's own back-pressure.
const fullUser = "signal_full"

var signalNames atomic.Int64

// signalName is a Name no other test of the suite shares, short enough
// for its session's application_name (63 bytes).
func signalName() string {
	return "sig" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(signalNames.Add(1), 10)
}

// shareSignals makes the Guards built from c share name's signals
// through the suite's PostgreSQL, logging to logger (nil: nowhere).
func shareSignals(t *testing.T, c *dbguard.Config, name string, logger *slog.Logger) {
	t.Helper()
	if logger == nil {
		logger = quiet
	}
	if err := dbbudget.Share(c, dbbudget.ShareConfig{DSN: pg.DSN(), Name: name, Logger: logger}); err != nil {
		t.Fatal(err)
	}
}

// signalSessions counts the sessions of name's signals that listen (their
// last statement a pg_notify: the hello, sent after LISTEN, or a signal).
func signalSessions(t *testing.T, admin *sql.Conn, name string, listening bool) int {
	t.Helper()
	q := `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`
	if listening {
		q += ` AND query LIKE 'SELECT pg_notify%'`
	}
	var n int
	if err := admin.QueryRowContext(context.Background(), q, "respool signals "+name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// awaitSignalSessions waits up to 10s until want sessions of name's
// signals listen (or, want 0, until none is left).
func awaitSignalSessions(t *testing.T, admin *sql.Conn, name string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	servers.WaitFor(t, ctx, fmt.Sprintf("%d sessions of the signals", want), func() (bool, error) {
		return signalSessions(t, admin, name, want > 0) == want, nil
	})
}

// signalGuard is the Guard of one process sharing name's signals, closed
// when the test ends.
func signalGuard(t *testing.T, name string, logger *slog.Logger) *dbguard.Guard {
	t.Helper()
	var c dbguard.Config
	shareSignals(t, &c, name, logger)
	g, err := dbguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// firstPause returns a Listener that sends the time of its first pause
// event on ch.
func firstPause(ch chan<- time.Time) resilience.Listener {
	var once atomic.Bool
	return func(e resilience.Event) {
		if e.Mechanism == "pause" && e.Kind == resilience.EventPaused && once.CompareAndSwap(false, true) {
			ch <- e.Time
		}
	}
}

// signalConnector is a respool Connector on the suite's PostgreSQL as
// user (s's test user when ""), sharing name's signals, edit applied to
// its Config; its DB closed when the test ends.
func signalConnector(t *testing.T, s *servers.Server, name string, edit func(*respool.Config)) (*sql.DB, *respool.Connector) {
	t.Helper()
	cfg, err := respool.ParseDSN(s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pool.Logger = quiet
	edit(cfg)
	shareSignals(t, &cfg.Resilience, name, nil)
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// bystanders are the processes that should stop dialing when one meets a
// fault: respool Connectors on the suite's PostgreSQL sharing name's
// signals, which have dialed nothing yet.
type bystanders struct {
	t      *testing.T
	dbs    []*sql.DB
	cs     []*respool.Connector
	paused chan time.Time // each one's first pause
}

func newBystanders(t *testing.T, name string, n int) *bystanders {
	b := &bystanders{t: t, paused: make(chan time.Time, n)}
	for range n {
		db, c := signalConnector(t, pg, name, func(cfg *respool.Config) { cfg.Resilience.Listener = firstPause(b.paused) })
		b.dbs, b.cs = append(b.dbs, db), append(b.cs, c)
	}
	return b
}

// stopWithin checks that every bystander paused its creations within 1s
// of at, then that none dials: each ping is refused with no connection
// attempt.
func (b *bystanders) stopWithin(at time.Time) {
	t := b.t
	t.Helper()
	for i := range b.cs {
		select {
		case e := <-b.paused:
			if lag := e.Sub(at); lag >= time.Second {
				t.Fatalf("a process paused %v after the fault's signal; want within 1s", lag)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d processes paused 5s after the fault's signal; want all within 1s", i, len(b.cs))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for i, db := range b.dbs {
		if err := db.PingContext(ctx); err == nil {
			t.Fatal("a bystander's ping dialed during the pause")
		}
		if s := b.cs[i].ResilienceStats(); s.ConnectAttempts != 0 {
			t.Fatalf("%d attempts of a bystander during the pause; want none", s.ConnectAttempts)
		}
	}
}

// channelOf is the channel of name's signals: "respool_signal_" and the
// FNV-1a 64 hash of "respool budget\x00"+name in hex (dbbudget's
// keysOf).
func channelOf(name string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte("respool budget\x00" + name))
	return "respool_signal_" + strconv.FormatUint(h.Sum64(), 16)
}

// eavesdrop listens on name's channel; its lines read back until a
// sentinel it sends itself (every line sent before is read).
func eavesdrop(t *testing.T, name string) (lines func() []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	ch := channelOf(name)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "SELECT pg_notify($1, 'sentinel')", ch); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n.Payload == "sentinel" {
				return got
			}
			got = append(got, n.Payload)
		}
	}
}

// senders returns the Guards (their ids) that sent pauses or open
// circuits among lines.
func senders(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 4 && (f[2] == "pause" || f[2] == "open") {
			out[f[1]] = true
		}
	}
	return out
}

// One process meets the server's back-pressure (its user's second login
// refused with 53300; its pause made 5s): the two others pause their
// creations within 1s of its pause, and their pings dial nothing; the
// pauses they received are not sent on (one Guard sent pauses).
func TestBackPressureInOneProcessStopsTheOthersDialing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := signalName()
	admin := servers.AdminConn(t, ctx, pg)
	if _, err := admin.ExecContext(ctx, "ALTER ROLE "+fullUser+" CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	lines := eavesdrop(t, name)
	others := newBystanders(t, name, 2)
	pausedA := make(chan resilience.Event, 1)
	dbA, _ := signalConnector(t, as(pg, fullUser), name, func(cfg *respool.Config) {
		cfg.Resilience.Pause.Classify = func(err error) (time.Duration, bool) {
			_, ok := dbguard.BackPressure(err)
			return 5 * time.Second, ok
		}
		cfg.Resilience.Listener = func(e resilience.Event) {
			if e.Mechanism == "pause" && e.Kind == resilience.EventPaused {
				select {
				case pausedA <- e:
				default:
				}
			}
		}
	})
	awaitSignalSessions(t, admin, name, 3)
	held, err := dbA.Conn(ctx) // the user's one session
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := held.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := dbA.Conn(ctx); err == nil {
		c.Close()
		t.Fatalf("a second session of %s was opened; want it refused (CONNECTION LIMIT 1)", fullUser)
	}
	var e resilience.Event
	select {
	case e = <-pausedA:
	default:
		t.Fatal("the process refused a second session did not pause")
	}
	var pe *pgconn.PgError
	if !errors.As(e.Err, &pe) || pe.Code != "53300" {
		t.Fatalf("the pause's reason: %v; want the server's 53300", e.Err)
	}
	others.stopWithin(e.Time)
	if s := senders(lines()); len(s) != 1 {
		t.Fatalf("%d Guards sent pauses (%v); want 1: the one that met the back-pressure (a pause received is not sent on)", len(s), s)
	}
}

// One process's server is dead (its port refuses connections): its
// circuit opens (for 5s here), and the two others, whose server is well,
// pause their creations within 1s of the opening, dialing nothing.
func TestADeadServerInOneProcessStopsTheOthersDialing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := signalName()
	others := newBystanders(t, name, 2)
	dead := &servers.Server{Kind: pg.Kind, Backend: pg.Backend, Host: "127.0.0.1", User: pg.User, Password: pg.Password, Database: pg.Database}
	host, port, _ := strings.Cut(servers.ClosedAddr(t), ":")
	dead.Host = host
	if dead.Port, _ = strconv.Atoi(port); dead.Port == 0 {
		t.Fatal("no closed port")
	}
	opened := make(chan time.Time, 1)
	dbA, _ := signalConnector(t, dead, name, func(cfg *respool.Config) {
		cfg.Resilience.Breaker.OpenDelay = delay.Strategy{Kind: delay.Constant, Initial: 5 * time.Second}
		cfg.Resilience.Listener = func(e resilience.Event) {
			if e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange && e.To == "open" {
				select {
				case opened <- e.Time:
				default:
				}
			}
		}
	})
	awaitSignalSessions(t, servers.AdminConn(t, ctx, pg), name, 3)
	var at time.Time
	for at.IsZero() {
		ping, stop := context.WithTimeout(ctx, time.Second)
		_ = dbA.PingContext(ping) // refused
		stop()
		select {
		case at = <-opened:
		case <-ctx.Done():
			t.Fatal("the dead server's circuit did not open within 30s")
		default:
		}
	}
	others.stopWithin(at)
}

// A process that starts while another's creations are paused pauses its
// own, until the same time (within a second), from the answer to its
// hello; once both leave, their sessions end.
func TestAProcessJoiningDuringAPauseIsPausedAndLeaveEndsTheSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := signalName()
	admin := servers.AdminConn(t, ctx, pg)
	a := signalGuard(t, name, nil)
	awaitSignalSessions(t, admin, name, 1)
	a.Pause().Hold(10*time.Second, errors.New("too many connections (test)"))
	until := a.Pause().State().Until
	b := signalGuard(t, name, nil)
	pausedUntil(t, b, until)
	a.Close()
	b.Close()
	awaitSignalSessions(t, admin, name, 0)
}

// pausedUntil waits up to 5s for g's pause to hold until about until
// (within a second: a line says what is left, in ms, when sent).
func pausedUntil(t *testing.T, g *dbguard.Guard, until time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	servers.WaitFor(t, ctx, "the pause to reach the other process", func() (bool, error) {
		s := g.Pause().State()
		return s.Holding() && s.Until.Sub(until).Abs() < time.Second, nil
	})
}

// The sessions of the signals killed at the server (as an operator or a
// network cut would): each Guard logs the loss once and the return once,
// dials again in the background, and a pause sent meanwhile reaches the
// other once both are back.
func TestKilledSessionsAreDialedAgainAndThePauseGetsThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := signalName()
	admin := servers.AdminConn(t, ctx, pg)
	var logged logtest.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	a, b := signalGuard(t, name, logger), signalGuard(t, name, logger)
	awaitSignalSessions(t, admin, name, 2)
	if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
		"respool signals "+name); err != nil {
		t.Fatal(err)
	}
	a.Pause().Hold(10*time.Second, errors.New("too many connections (test)"))
	pausedUntil(t, b, a.Pause().State().Until)
	servers.WaitFor(t, ctx, "two losses and two returns logged", func() (bool, error) {
		out := logged.String()
		return strings.Count(out, "signals is lost") == 2 && strings.Count(out, "signals is back") == 2, nil
	})
	if out := logged.String(); strings.Count(out, "signals is lost") != 2 {
		t.Fatalf("log:\n%s\nwant one loss line per Guard", out)
	}
}
