package dbbudget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/pool"
)

// Config configures a Budget. DSN, Name and Max are required; the zero
// values of the others are their documented defaults.
type Config struct {
	// DSN reaches the database whose connections the budget counts: the
	// server itself, not a pooler (see the package documentation). The
	// pools' own DSN will do, respool's keys (respool_…) and all: they are
	// taken out. It is read by pgx (a postgres:// URL or keyword/value) or
	// go-sql-driver/mysql, and its password appears in no error or log.
	DSN string
	// Driver is "pgx" (PostgreSQL) or "mysql" (MySQL, MariaDB). Empty: by
	// the DSN's form, as respool.ParseDSN tells it (a postgres:// URL or
	// keyword/value: "pgx"; anything else: "mysql").
	Driver string
	// Name names the budget: every process sharing a database's
	// connections gives the same Name and Max. It is hashed into the
	// lock spaces (see the package documentation: collisions).
	Name string
	// Max is the number of slots (connections) in all, across every
	// process. At least 1, at most 100000.
	Max int
	// Timeout bounds each wait of an Acquire: for the coordinating
	// session (another Acquire or the heartbeat may be using it) and for
	// the database's answer. Zero: 100ms.
	Timeout time.Duration
	// Logger gets one line when the coordinating session is lost and one
	// when it is back. Nil: slog.Default().
	Logger *slog.Logger
}

// errClosed is returned by Acquire after Close.
var errClosed = errors.New("dbbudget: closed")

const (
	heartbeat  = 250 * time.Millisecond // how often a process takes the census and asks its pools back
	wantHold   = 2 * heartbeat          // how long a refused Acquire keeps the want lock (a pool held back asks every 100ms)
	beatBound  = time.Second            // a heartbeat's bound, and Timeout's most
	closeBound = time.Second            // ending a session (a Terminate message sent)
	dialBound  = 5 * time.Second        // a reconnection's dial (a login under load can take a good part of a second)
	backoffMin = 50 * time.Millisecond  // reconnections: the first delay, doubled to backoffMax
	backoffMax = 2 * time.Second
)

// Budget is a pool.Budget, and a pool.Reclaimer, whose slots are locks held
// in the database by one coordinating session per process; see the package
// documentation. It is safe for concurrent use. Close it when its pools
// are closed.
type Budget struct {
	c       Config
	dialer  dialer
	secrets dsnform.Secrets // of the DSN: redacted from errors and logs
	ctx     context.Context // ends with Close
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
	kickc   chan struct{} // cap 1: a heartbeat now
	once    sync.Once     // Close
	every   time.Duration // heartbeat, but in tests that need no heartbeat of their own

	// tok is the coordinating session's mutex, a channel so that a wait
	// for it has a bound: whoever received its token uses sess, then sends
	// it back. tokWanted counts those waiting for it, which the heartbeat's
	// wait for notifications makes way for.
	tok       chan struct{}
	tokWanted atomic.Int32
	sess      session // guarded by tok; nil while lost

	wmu        sync.Mutex         // guards waitCancel (taken under mu too: never the other way)
	waitCancel context.CancelFunc // ends the heartbeat's wait on the session

	mu          sync.Mutex // guards the following
	gen         uint64     // the session's generation (written holding tok and mu)
	held        map[*slot]struct{}
	spare       []int     // slots locked on the session that no Acquire holds (their release found the session busy)
	known       int       // the slots held when the session last answered: while lost, the most it holds
	down        bool      // the session is lost
	closed      bool      // Close was called
	lastRefused time.Time // the last Acquire refused while the session answered
	wantOn      bool      // the session holds the want lock (written holding tok and mu)
	view        census    // the last heartbeat's
	pools       []*attached
	rotate      int // spread's first pool, then the next
	first       int // take's first slot tried, then the next: processes do not all try slot 0 first
	refused     uint64
	storeErrors uint64
	reclaiming  int // what the pools were last asked to give back (askPools)
}

// slot is one slot an Acquire returned: idx is its lock on the session of
// generation gen, -1 when it has none.
type slot struct {
	idx int
	gen uint64
}

// attached is a pool attached by Attach; asked is owned by the heartbeat.
type attached struct {
	reclaim func(n int, inUse bool)
	asked   bool // its last request was for objects (not yet ended by a 0)
}

var (
	_ pool.Budget = (*Budget)(nil)
	_ interface {
		Attach(func(int, bool)) func()
	} = (*Budget)(nil)
)

const mechanism = "dbbudget"

// New checks cfg, opens the coordinating session (within ctx) and starts
// the heartbeat. Its error names a bad Config field, the value and what is
// accepted (a *resilience.ConfigError), or says why the database refused
// (its password redacted); behind a connection pooler it matches
// ErrPooler.
func New(ctx context.Context, cfg Config) (*Budget, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := resil.FirstError(
		resil.Check(cfg.DSN != "", mechanism, "DSN", `""`, "a DSN of the database itself (the pools' DSN will do)"),
		resil.Check(cfg.Driver == "" || cfg.Driver == "pgx" || cfg.Driver == "mysql", mechanism, "Driver", fmt.Sprintf("%q", cfg.Driver),
			`"pgx" (PostgreSQL), "mysql" (MySQL, MariaDB), or "" (by the DSN's form)`),
		resil.Check(cfg.Name != "", mechanism, "Name", `""`, "a name every process of the budget gives"),
		resil.Check(cfg.Max >= 1 && cfg.Max <= 100000, mechanism, "Max", cfg.Max, "an integer ≥ 1 and ≤ 100000"),
		resil.Check(cfg.Timeout > 0 && cfg.Timeout <= beatBound, mechanism, "Timeout", cfg.Timeout, "a positive duration at most 1s, or 0 for 100ms"),
	); err != nil {
		return nil, err
	}
	d, secrets, err := dialerOf(cfg)
	if err != nil {
		return nil, err
	}
	return start(ctx, cfg, d, secrets, heartbeat)
}

// start opens the first session with d and starts the heartbeat, every
// (cfg checked).
func start(ctx context.Context, cfg Config, d dialer, secrets dsnform.Secrets, every time.Duration) (*Budget, error) {
	bctx, cancel := context.WithCancel(context.Background())
	b := &Budget{c: cfg, dialer: d, secrets: secrets, ctx: bctx, cancel: cancel, done: make(chan struct{}),
		kickc: make(chan struct{}, 1), tok: make(chan struct{}, 1), held: map[*slot]struct{}{}, gen: 1,
		first: rand.IntN(cfg.Max), every: every}
	s, err := d.dial(ctx, b.kick)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("dbbudget %s: the coordinating session to %s: %w", cfg.Name, d.engine(), secrets.Redact(err))
	}
	b.sess = s
	b.tok <- struct{}{}
	go b.run()
	return b, nil
}

// dialerOf reads cfg.DSN, respool's keys taken out, with its driver's
// parser.
func dialerOf(cfg Config) (dialer, dsnform.Secrets, error) {
	text, err := dsnform.Read(cfg.DSN, "respool_")
	if err != nil {
		return nil, nil, fmt.Errorf("dbbudget: Config.DSN: %w", err)
	}
	driver := cfg.Driver
	if driver == "" {
		driver = text.Form.Driver()
	}
	k := keysOf(cfg.Name)
	if driver == "mysql" {
		mc, err := mysql.ParseDSN(text.Rest)
		if err != nil {
			return nil, nil, fmt.Errorf("dbbudget: Config.DSN: %w", text.Secrets.Redact(err))
		}
		mc.Logger = quietMySQL{} // the driver's lines on a broken session: the Budget logs the loss once
		return &myDialer{cfg: mc, keys: k, max: cfg.Max}, text.Secrets.With(mc.Passwd), nil
	}
	cc, secrets, err := pgConfig(text, "respool budget "+cfg.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("dbbudget: Config.DSN: %w", err)
	}
	return &pgDialer{cc: cc, keys: k, max: cfg.Max}, secrets, nil
}

// pgConfig reads text's DSN with pgx; the session is named app
// (application_name, at most 63 bytes) unless the DSN names it. The error
// is redacted; the secrets returned include the password.
func pgConfig(text *dsnform.Text, app string) (*pgx.ConnConfig, dsnform.Secrets, error) {
	cc, err := pgx.ParseConfig(text.Rest)
	if err != nil {
		return nil, nil, text.Secrets.Redact(err)
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = app[:min(len(app), 63)]
	}
	return cc, text.Secrets.With(cc.Password), nil
}

// Acquire takes a slot: a free lock in the database, unless this process
// holds its share or more while a process below its share waits. While
// the coordinating session is lost, or busy beyond Timeout, it decides
// alone: one of the slots held when the session last answered, no more.
// It waits at most Timeout for the session and Timeout for its answer (a
// caller's context that ends sooner ends the first wait, not the second:
// a statement cut short would end the session). Its error matches
// pool.ErrBudgetExhausted when no slot is free to it.
func (b *Budget) Acquire(ctx context.Context) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dbbudget %s: %w", b.c.Name, err)
	}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return nil, errClosed
	case b.down:
		defer b.mu.Unlock()
		return b.localLocked("the coordinating session is lost")
	case !b.view.mayBorrow(len(b.held)):
		defer b.mu.Unlock()
		b.refuseLocked()
		return nil, fmt.Errorf("dbbudget %s: %d slots held, this process's share (%d of %d among %d processes) or more, while another process below its share waits: %w",
			b.c.Name, len(b.held), b.view.share, b.c.Max, b.view.members, pool.ErrBudgetExhausted)
	}
	b.mu.Unlock()
	switch got, err := b.lockSession(ctx, b.c.Timeout); {
	case err != nil:
		return nil, fmt.Errorf("dbbudget %s: %w", b.c.Name, err)
	case !got:
		b.mu.Lock()
		defer b.mu.Unlock()
		b.storeErrors++
		return b.localLocked("the coordinating session is busy beyond Timeout")
	}
	defer b.unlockSession()
	b.mu.Lock()
	if b.closed || b.sess == nil {
		defer b.mu.Unlock()
		if b.closed {
			return nil, errClosed
		}
		return b.localLocked("the coordinating session is lost")
	}
	if n := len(b.spare); n > 0 {
		defer b.mu.Unlock()
		idx := b.spare[n-1]
		b.spare = b.spare[:n-1]
		return b.grantLocked(idx)
	}
	not, first := b.lockedLocked(), b.nextFirstLocked()
	s := b.sess
	b.mu.Unlock()

	qctx, cancel := context.WithTimeout(b.ctx, b.c.Timeout)
	got, err := s.take(qctx, not, 1, first)
	cancel()
	if err != nil {
		b.lost(err)
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed {
			return nil, errClosed
		}
		return b.localLocked("the coordinating session is lost")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known = len(b.held)
	if len(got) == 0 {
		b.refuseLocked()
		return nil, fmt.Errorf("dbbudget %s: all %d slots taken: %w", b.c.Name, b.c.Max, pool.ErrBudgetExhausted)
	}
	return b.grantLocked(got[0])
}

// localLocked decides an Acquire without the session (b.mu held): a slot
// while fewer than known are held.
func (b *Budget) localLocked(why string) (func(), error) {
	if len(b.held) < b.known {
		return b.addLocked(&slot{idx: -1}), nil
	}
	b.refused++
	return nil, fmt.Errorf("dbbudget %s: %s: holding the %d slots held before: %w", b.c.Name, why, b.known, pool.ErrBudgetExhausted)
}

// refuseLocked counts a refusal while the session answers (b.mu held):
// the want lock is taken at once (kick), and held for wantHold after the
// last.
func (b *Budget) refuseLocked() {
	b.refused++
	b.lastRefused = time.Now()
	if !b.wantOn {
		b.kick()
	}
}

// grantLocked gives the slot locked idx (b.mu and tok held) to a new slot
// and returns its release, or, when a held slot has none (taken while the
// session was lost), to that one and refuses: the sum stays within Max.
func (b *Budget) grantLocked(idx int) (func(), error) {
	for s := range b.held {
		if s.idx < 0 {
			s.idx, s.gen = idx, b.gen
			b.refused++ // not a want: this process is over its slots, not short of them
			return nil, fmt.Errorf("dbbudget %s: the slot free went to a connection opened while the coordinating session was lost: %w",
				b.c.Name, pool.ErrBudgetExhausted)
		}
	}
	r := b.addLocked(&slot{idx: idx, gen: b.gen})
	b.known = len(b.held)
	return r, nil
}

// addLocked holds s (b.mu held) and returns its release.
func (b *Budget) addLocked(s *slot) func() {
	b.held[s] = struct{}{}
	var once sync.Once
	return func() { once.Do(func() { b.release(s) }) }
}

// lockedLocked lists the slots locked on the session (b.mu and tok held).
func (b *Budget) lockedLocked() []int {
	not := slices.Clone(b.spare)
	if not == nil {
		not = []int{}
	}
	for s := range b.held {
		if s.idx >= 0 {
			not = append(not, s.idx)
		}
	}
	return not
}

// nextFirstLocked returns the slot a take tries first (b.mu held).
func (b *Budget) nextFirstLocked() int {
	f := b.first
	b.first = (b.first + 1) % b.c.Max
	return f
}

// release gives s back: its lock is given back to the database (within
// Timeout; else the heartbeat gives it). Known follows only once the
// database answered: a release whose session turns out lost leaves the
// slot to be taken again.
func (b *Budget) release(s *slot) {
	b.mu.Lock()
	if _, ok := b.held[s]; !ok {
		b.mu.Unlock()
		return
	}
	delete(b.held, s)
	idx, gen, closed := s.idx, s.gen, b.closed
	b.mu.Unlock()
	if idx < 0 || closed {
		return
	}
	if got, _ := b.lockSession(context.Background(), b.c.Timeout); !got {
		b.mu.Lock()
		if b.gen == gen {
			b.spare = append(b.spare, idx)
		}
		b.mu.Unlock()
		return
	}
	defer b.unlockSession()
	if b.sess == nil || b.gen != gen {
		return // lost with its session
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.c.Timeout)
	defer cancel()
	if err := b.sess.give(ctx, []int{idx}); err != nil {
		b.lost(err)
		return
	}
	b.mu.Lock()
	b.known = len(b.held)
	b.mu.Unlock()
}

// lockSession waits, at most d and while ctx lasts, for the session's
// token (got: the caller holds it, and sends it back with unlockSession).
// The heartbeat's wait for notifications, if any, is ended to make way.
func (b *Budget) lockSession(ctx context.Context, d time.Duration) (got bool, err error) {
	b.tokWanted.Add(1)
	defer b.tokWanted.Add(-1)
	b.endWait()
	select {
	case <-b.tok:
		return true, nil
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.tok:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// unlockSession sends the session's token back.
func (b *Budget) unlockSession() { b.tok <- struct{}{} }
