package respool

import (
	"bytes"
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// newTestGroup makes a Group for cfg and closes it when the test ends.
func newTestGroup(t *testing.T, cfg GroupConfig) *Group {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	g, err := NewGroup(cfg)
	if err != nil {
		t.Fatalf("NewGroup: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		if err := g.Close(ctx); err != nil {
			t.Errorf("Group.Close: %v", err)
		}
	})
	return g
}

// member opens a *sql.DB on the Group's member key, whose connections fc
// makes; it is closed when the test ends.
func member(t *testing.T, g *Group, key string, fc *faultConnector) (*sql.DB, *Connector) {
	t.Helper()
	c, err := g.Connector(key, Config{Connector: fc})
	if err != nil {
		t.Fatalf("Group.Connector(%q): %v", key, err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db, c
}

// waitGroupStats is waitStats for a Group's Stats.
func waitGroupStats(t *testing.T, g *Group, ok func(s pool.KeyedStats[string]) bool) pool.KeyedStats[string] {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		s := g.Stats()
		if ok(s) || time.Now().After(deadline) {
			return s
		}
		runtime.Gosched()
	}
}

func sqlConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	return c
}

// Two databases share a budget of 2: a member waiting for the budget gets
// the slot of the next connection the other gives back, and a member that
// needs more than it has takes the slot of the other's idle connection.
func TestGroupMembersShareOneBudget(t *testing.T) {
	m := newMock(t)
	fcP, fcR := &faultConnector{m: m}, &faultConnector{m: m}
	g := newTestGroup(t, GroupConfig{MaxConns: 2})
	primary, _ := member(t, g, "primary", fcP)
	replica, _ := member(t, g, "replica", fcR)

	p1, p2 := sqlConn(t, primary), sqlConn(t, primary)
	got := make(chan *sql.Conn)
	go func() {
		c, err := replica.Conn(context.Background())
		if err != nil {
			t.Errorf("replica's DB.Conn: %v", err)
		}
		got <- c
	}()
	if s := waitGroupStats(t, g, func(s pool.KeyedStats[string]) bool { return s.WaitingForBudget == 1 }); s.WaitingForBudget != 1 {
		t.Fatalf("%d callers wait for the budget, want replica's 1", s.WaitingForBudget)
	}
	if err := p1.Close(); err != nil { // its slot goes to the replica
		t.Fatal(err)
	}
	r1 := <-got
	s := waitGroupStats(t, g, func(s pool.KeyedStats[string]) bool { return s.Keys["primary"].Destroys.Yielded == 1 })
	if s.Keys["primary"].Destroys.Yielded != 1 || fcR.made() != 1 || !fcP.conn(t, 1).closed.Load() {
		t.Fatalf("primary yielded %d, replica made %d, primary's first closed %v; want 1, 1, true",
			s.Keys["primary"].Destroys.Yielded, fcR.made(), fcP.conn(t, 1).closed.Load())
	}

	// Both idle: the primary's second connection needs the replica's slot.
	for _, c := range []*sql.Conn{p2, r1} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	p3, p4 := sqlConn(t, primary), sqlConn(t, primary)
	s = waitGroupStats(t, g, func(s pool.KeyedStats[string]) bool { return s.Keys["replica"].Total == 0 })
	if s.Keys["replica"].Destroys.Evicted != 1 || s.Keys["primary"].InUse != 2 || s.Total != 2 {
		t.Fatalf("replica evicted %d, primary in use %d, total %d; want 1, 2, 2 (stats %+v)",
			s.Keys["replica"].Destroys.Evicted, s.Keys["primary"].InUse, s.Total, s)
	}
	_, _ = p3.Close(), p4.Close()
	if s.MaxObjects != 2 || s.Keys["primary"].Creates != 3 || s.Keys["replica"].Creates != 1 {
		t.Fatalf("MaxObjects %d, creates %d and %d; want 2, 3 and 1 (p3 reused p2's)",
			s.MaxObjects, s.Keys["primary"].Creates, s.Keys["replica"].Creates)
	}
}

func TestGroupRefusesWhatTheBudgetCannotGive(t *testing.T) {
	if _, err := NewGroup(GroupConfig{MaxConns: -1}); !errors.Is(err, ErrInvalidConfig) || !isPoolConfigError(err, "MaxObjects") {
		t.Fatalf("NewGroup(MaxConns -1) = %v, want ErrInvalidConfig naming MaxObjects", err)
	}
	m := newMock(t)
	g := newTestGroup(t, GroupConfig{MaxConns: 4, MaxQueue: 10})
	for _, c := range []struct {
		name, field string
		pc          pool.Config
	}{
		{"more than the budget", "MaxObjects", pool.Config{MaxObjects: 5}},
		{"a queue of its own", "MaxQueueSize", pool.Config{MaxQueueSize: 3}},
		{"MinIdle over the budget", "MinIdle", pool.Config{MinIdle: 5, MaxObjects: 4}},
	} {
		_, err := g.Connector("primary", Config{Connector: &faultConnector{m: m}, Pool: c.pc})
		if !errors.Is(err, ErrInvalidConfig) || !isPoolConfigError(err, c.field) {
			t.Errorf("%s: Connector = %v, want ErrInvalidConfig naming %s", c.name, err, c.field)
		}
	}
	if _, err := g.Connector("primary", Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Connector of an empty Config = %v, want ErrInvalidConfig", err)
	}
	member(t, g, "primary", &faultConnector{m: m})
	if _, err := g.Connector("primary", Config{Connector: &faultConnector{m: m}}); !errors.Is(err, pool.ErrKeyExists) {
		t.Errorf("second Connector(primary) = %v, want pool.ErrKeyExists", err)
	}
}

func isPoolConfigError(err error, field string) bool {
	var ce *resilience.ConfigError
	return errors.As(err, &ce) && ce.Field == field
}

// A member's Close closes it alone, and frees its key; the Group's Close
// closes every member.
func TestGroupClose(t *testing.T) {
	m := newMock(t)
	g, err := NewGroup(GroupConfig{MaxConns: 2, Name: "shop", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	fcP, fcR := &faultConnector{m: m}, &faultConnector{m: m}
	rw, err := g.Connector("primary", Config{Connector: fcP})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := g.Connector("replica", Config{Connector: fcR})
	if err != nil {
		t.Fatal(err)
	}
	if rw.Name() != "shop[primary]" || ro.Name() != "shop[replica]" {
		t.Fatalf("members named %q and %q, want shop[primary] and shop[replica]", rw.Name(), ro.Name())
	}
	primary, replica := sql.OpenDB(rw), sql.OpenDB(ro)
	defer primary.Close()
	defer replica.Close()
	if err := replica.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := replica.Close(); err != nil { // the member alone
		t.Fatal(err)
	}
	if err := primary.PingContext(context.Background()); err != nil {
		t.Fatalf("primary after the replica closed: %v", err)
	}
	ro2, err := g.Connector("replica", Config{Connector: fcR})
	if err != nil {
		t.Fatalf("Connector(replica) after its Close: %v", err)
	}
	held, err := primary.Conn(context.Background()) // in use as the Group closes
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- g.Close(ctx) }()
	waitGroupStats(t, g, func(pool.KeyedStats[string]) bool { return rw.pool.Stats().Closed && ro2.pool.Stats().Closed })
	if !rw.pool.Stats().Closed || !ro2.pool.Stats().Closed {
		t.Error("members still open after Group.Close")
	}
	if _, err := ro2.Connect(context.Background()); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("Connect after Group.Close = %v, want pool.ErrClosed", err)
	}
	if _, err := g.Connector("other", Config{Connector: fcR}); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("Connector after Group.Close = %v, want pool.ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Group.Close returned (%v) with a connection in use", err)
	default:
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Group.Close: %v", err)
	}
	if s := g.Stats(); s.Total != 0 || fcP.made() != 1 || !fcP.conn(t, 1).closed.Load() {
		t.Fatalf("after Close: total %d, primary made %d; want 0, 1 and closed", s.Total, fcP.made())
	}
}

// lateConnector is a driver.Connector whose Connect, until gate is closed,
// returns only after its context has ended and gate has been closed: a
// connection attempt that outlives the pool's bound (a dial, a TLS or
// startup exchange that notices the cancellation late). inFlight counts the
// Connects under way.
type lateConnector struct {
	*faultConnector
	gate     chan struct{}
	inFlight atomic.Int32
}

func (lc *lateConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	lc.inFlight.Add(1)
	defer lc.inFlight.Add(-1)
	select {
	case <-lc.gate:
		return lc.faultConnector.Connect(ctx)
	case <-ctx.Done():
	}
	<-lc.gate
	return nil, ctx.Err()
}

// A member's connection attempt given up on at its CreateTimeout keeps its
// slot of the budget until it returns: no other member connects meanwhile,
// so connections being opened and open never exceed MaxConns.
func TestGroupKeepsTheSlotOfAConnectionAttemptGivenUpOn(t *testing.T) {
	m := newMock(t)
	g := newTestGroup(t, GroupConfig{MaxConns: 1})
	lc := &lateConnector{faultConnector: &faultConnector{m: m}, gate: make(chan struct{})}
	var once sync.Once
	openGate := func() { once.Do(func() { close(lc.gate) }) }
	t.Cleanup(openGate)
	a, err := g.Connector("a", Config{Connector: lc, Pool: pool.Config{CreateTimeout: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	fcB := &faultConnector{m: m}
	_, b := member(t, g, "b", fcB)
	if _, err := a.Connect(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a's Connect = %v, want its CreateTimeout's deadline", err)
	}
	if n := lc.inFlight.Load(); n != 1 {
		t.Fatalf("%d of a's connection attempts under way, want the one given up on", n)
	}
	got := make(chan error, 1)
	go func() {
		c, err := b.Connect(context.Background())
		if err == nil {
			err = c.Close()
		}
		got <- err
	}()
	waitGroupStats(t, g, func(s pool.KeyedStats[string]) bool { return s.WaitingForBudget == 1 || fcB.made() > 0 })
	if n := fcB.made(); n != 0 {
		t.Fatalf("b connected while a's connection attempt, given up on, still ran: %d connections for MaxConns 1", 1+n)
	}
	openGate() // a's attempt ends: its slot goes to b
	if err := <-got; err != nil {
		t.Fatalf("b's Connect: %v", err)
	}
	if n := fcB.made(); n != 1 {
		t.Fatalf("b made %d connections, want 1", n)
	}
}

// Closing the Group stops each member's pause timer, as closing the
// member's Connector does.
func TestGroupCloseStopsMembersPauseTimer(t *testing.T) {
	clk := clocktest.New(time.Unix(0, 0))
	g, err := NewGroup(GroupConfig{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("NewGroup: %v", err)
	}
	cfg := Config{Connector: &faultConnector{}}
	cfg.Resilience.Clock = clk
	c, err := g.Connector("a", cfg)
	if err != nil {
		t.Fatalf("Group.Connector: %v", err)
	}
	c.guard.Pause().Hold(time.Minute, errors.New("slow down"))
	if _, pending := clk.Next(); !pending {
		t.Fatal("no timer pending while paused; want the pause's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		t.Fatalf("Group.Close: %v", err)
	}
	if next, pending := clk.Next(); pending {
		t.Errorf("a timer due at %v is pending after Group.Close; want none", next)
	}
}

// A member whose Config.Pool.Logger is nil logs to the Group's Logger, its
// guard's lines (the pause) too: they went to slog.Default.
func TestGroupLoggerLogsTheMembersGuard(t *testing.T) {
	logs := &syncWriter{w: new(bytes.Buffer)}
	g, err := NewGroup(GroupConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close(context.Background()) }()
	c, err := g.Connector("a", Config{Connector: &faultConnector{}})
	if err != nil {
		t.Fatal(err)
	}
	c.guard.Pause().Hold(time.Minute, errors.New("slow down"))
	if !strings.Contains(logs.String(), `msg="creations paused" pool=respool-group[a]`) {
		t.Errorf("the Group's log lacks the member's pause:\n%s", logs)
	}
}
