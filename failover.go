package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/resil"
)

// ErrNoWritableServer is the reason a connection attempt of a Connector
// for writes on several PostgreSQL hosts is refused without dialing while
// none of them takes writes: each listed host is unreachable, in recovery
// (a standby) or read-only, as the Connector's watch of them last saw (see
// primaryWatch). The caller's error is a *resilience.RejectedError
// (errors.Is matches resilience.ErrRejected and ErrNoWritableServer) whose
// RetryAfter is when the watch looks again, and whose message names each
// host and what it was found to be.
var ErrNoWritableServer = errors.New("no listed server takes writes")

// The watch's pace. A standby's session is asked every watchPoll, so that
// a promotion is seen within that time; a host that refused or dropped the
// connection is dialed again every watchRedial, about as often as the
// breaker's probe (dbguard.BreakerPreset); an answer is waited for
// watchTimeout at most. The watch ends once no connection attempt has
// asked it for watchIdle.
const (
	watchPoll    = 10 * time.Millisecond
	watchRedial  = 250 * time.Millisecond
	watchTimeout = time.Second
	watchIdle    = 30 * time.Second
)

// primaryWatch finds the server that takes writes among the hosts of a
// multi-host pgx DSN (postgres://u@a,b/db?target_session_attrs=read-write)
// of a Connector for writes, while its connection attempts find none: a
// primary that died or was demoted, a standby not yet promoted. It starts
// at a failed connection attempt, or at a statement whose connection was
// lost (the server shut down, or the connection broke: the pool's new
// connections then wait for its first look instead of each dialing every
// host; on a primary that is well, that look costs one dial). It holds one
// session to each host that accepts one, asking it every watchPoll
// whether it takes writes (the question of serverReadOnly: in recovery, or
// read-only for every new session), and dials the others every
// watchRedial. While every host is known to be unreachable or read-only
// (or not yet seen), connection attempts are refused at once (admit:
// ErrNoWritableServer) instead of dialing each host and waiting out the
// breaker: callers fail fast, and the servers see this watch's few dials,
// not every caller's. On a read-only host it parks one connection that
// waits, connected, for the host to take writes (park). The moment a host
// answers that it takes writes, found is called (the breaker half-opens:
// the next attempt goes through, and takes the parked connection), and
// attempts dial that host first (prefer) until one fails or a write is
// refused as read-only. The watch ends when an attempt succeeds, when no
// attempt asked for watchIdle, or when the Connector closes.
//
// Its state: run is the current watch (nil: none), read without the lock,
// started and ended under mu; each host's state is written by its
// goroutine only, read by admit and prefer.
type primaryWatch struct {
	hosts  []*watchedHost
	hook   func(context.Context, *pgx.ConnConfig) error // Config.PgxBeforeConnect: the watch's sessions get a fresh password too
	clock  clock.Clock
	name   string // the pool's, in rejections
	logger *slog.Logger
	found  func(refused bool) // once a watch: a host takes writes after none did, before attempts are let through; refused: the watch refused attempts; set before first use

	mu     sync.Mutex               // orders the starts and ends of runs, and closed
	run    atomic.Pointer[watchRun] // nil: not watching
	closed bool
	wg     sync.WaitGroup // every host goroutine of every run

	asked atomic.Int64 // when an attempt last asked (admit), unix nanoseconds

	// dial makes a connection through the Connector's real driver
	// (connFactory.create): the parked one (see park). Set before first use.
	dial func(context.Context) (driver.Conn, error)
	// parking is the parked connection being made or waiting, nil when
	// none is; parked holds it once the server takes writes, until an
	// attempt takes it (takeParked) or the watch ends.
	parking atomic.Pointer[parking]
	parked  atomic.Pointer[parkedConn]

	// preferred is the address of the host last found taking writes, which
	// attempts dial first (see prefer), until an attempt fails or a write
	// is refused as read-only (forget); nil: none, the DSN's order.
	preferred atomic.Pointer[string]
}

// watchRun is one watch, from a failed attempt to its end.
type watchRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	// found is closed when a host is first found taking writes in this
	// run, once primaryWatch.found has returned: a parked connection's
	// wait asks again at once (see parkOn).
	found     chan struct{}
	foundOnce sync.Once
	refused   atomic.Bool // admit refused an attempt in this run
}

// watchedHost is one host of the DSN: its own connection configuration
// (the DSN's, this host only, without target_session_attrs' check) and
// what the current watch last found it to be.
type watchedHost struct {
	addr  string          // host:port, as in messages
	cfg   *pgx.ConnConfig // this host only; copied for each dial when a hook changes it (see connect)
	state atomic.Int32    // a hostState
}

type hostState int32

const (
	hostUnseen      hostState = iota // not yet seen in this watch
	hostRefusing                     // the server refused the connection (authentication, too many connections): attempts go on, to tell why
	hostUnreachable                  // the connection failed or broke
	hostReadOnly                     // in recovery, or read-only for every new session
	hostWritable                     // takes writes
)

func (s hostState) String() string {
	switch s {
	case hostUnreachable:
		return "unreachable"
	case hostReadOnly:
		return "read-only or in recovery"
	case hostWritable:
		return "takes writes"
	case hostRefusing:
		return "refused the connection"
	}
	return "not yet known"
}

// newPrimaryWatch returns the watch of a pgx DSN for writes that lists
// several hosts, or nil for any other.
func newPrimaryWatch(cfg Config, clk clock.Clock, name string, logger *slog.Logger) *primaryWatch {
	if cfg.DriverName != "pgx" && cfg.DriverName != "pgx/v5" {
		return nil
	}
	pc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil || len(pc.Fallbacks) == 0 {
		return nil
	}
	w := &primaryWatch{clock: clk, name: name, logger: logger, hook: cfg.PgxBeforeConnect}
	for addr, entries := range byHost(&pc.Config) {
		c := pc.Copy() // made by ParseConfig, as pgconn.ConnectConfig requires
		c.Host, c.Port, c.TLSConfig = entries[0].Host, entries[0].Port, entries[0].TLSConfig
		c.Fallbacks, c.ValidateConnect = entries[1:], nil // this host's other entries (sslmode=prefer: TLS, then without)
		w.hosts = append(w.hosts, &watchedHost{addr: addr, cfg: c})
	}
	if len(w.hosts) < 2 {
		return nil
	}
	return w
}

// failed notes a failed connection attempt: it starts a watch unless one
// is under way.
func (w *primaryWatch) failed() {
	w.forget()
	if w.active() {
		return // the common case while attempts fail: no lock
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.active() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &watchRun{ctx: ctx, cancel: cancel, found: make(chan struct{})}
	w.run.Store(r)
	w.asked.Store(w.clock.Now().UnixNano())
	for _, h := range w.hosts {
		h.state.Store(int32(hostUnseen))
	}
	w.logger.Info("respool: a connection attempt found no server taking writes: watching the listed servers",
		slog.String("pool", w.name), slog.Int("servers", len(w.hosts)))
	for _, h := range w.hosts {
		w.wg.Go(func() { w.watch(r, h) })
	}
}

// active reports whether a watch is under way.
func (w *primaryWatch) active() bool { return w.run.Load() != nil }

// succeeded notes a connection attempt that reached a server taking writes:
// the watch, if any, ends.
func (w *primaryWatch) succeeded() { w.end(nil) }

// parkedConn is a connection made to a host while it was read-only (a
// standby), whose making waited until the host took writes (see park):
// the wires its attempt dialed are in log.
type parkedConn struct {
	conn driver.Conn
	log  *dialLog
}

// parkedHostKey carries, in the context of the parked connection's
// attempt, the host it is made to and the clock of its waits (see
// parkOn).
type parkedHostKey struct{}

type parkedHost struct {
	addr  string
	clock clock.Clock
	found <-chan struct{} // the run's found
}

// parking is a parked connection under way to host: done is closed when
// its making ends, the connection parked or not.
type parking struct {
	host *watchedHost
	done chan struct{}
}

// park makes, in the background, one connection to h, a host found
// read-only: it connects and authenticates now, then waits, asking every
// watchPoll, until the server takes writes (parkOn), so that the first
// connection to a promoted standby is ready the moment it takes writes
// rather than one dial later. One is made at a time; it ends with the
// watch r (or after watchIdle).
func (w *primaryWatch) park(r *watchRun, h *watchedHost) {
	if w.dial == nil || w.parked.Load() != nil || w.parking.Load() != nil {
		return
	}
	p := &parking{host: h, done: make(chan struct{})}
	if !w.parking.CompareAndSwap(nil, p) {
		return
	}
	w.wg.Go(func() {
		defer func() {
			w.parking.Store(nil)
			close(p.done)
		}()
		ph := parkedHost{addr: h.addr, clock: w.clock, found: r.found}
		ctx, cancel := context.WithTimeout(context.WithValue(r.ctx, parkedHostKey{}, ph), watchIdle)
		defer cancel()
		ctx, log := withDialLog(ctx)
		conn, err := w.dial(ctx)
		(*attemptSet)(nil).end(log)
		if err != nil {
			return
		}
		if r.ctx.Err() != nil || !w.parked.CompareAndSwap(nil, &parkedConn{conn: conn, log: log}) {
			_ = conn.Close()
			return
		}
		w.writable(r, h)
		if r.ctx.Err() != nil { // the watch ended meanwhile: nobody takes it
			w.dropParked()
		}
	})
}

// takeParked returns the parked connection, if any, its wires moved to
// the log of the attempt that takes it (see physFactory.create), or nil.
// A parked connection still under way to a host found taking writes is
// waited for, within ctx and watchTimeout: it is connected and
// authenticated already, and is ready one question after the host takes
// writes, where a dial would start from nothing.
func (w *primaryWatch) takeParked(ctx context.Context) driver.Conn {
	if pk := w.parking.Load(); pk != nil && w.parked.Load() == nil && hostState(pk.host.state.Load()) == hostWritable {
		t := w.clock.NewTimer(watchTimeout)
		select {
		case <-pk.done:
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}
	p := w.parked.Swap(nil)
	if p == nil {
		return nil
	}
	if l, _ := ctx.Value(dialLogKey{}).(*dialLog); l != nil {
		p.log.mu.Lock()
		wires := p.log.wires
		p.log.mu.Unlock()
		l.mu.Lock()
		l.wires = append(l.wires, wires...)
		l.mu.Unlock()
	}
	return p.conn
}

// dropParked closes a parked connection nobody took.
func (w *primaryWatch) dropParked() {
	if p := w.parked.Swap(nil); p != nil {
		_ = p.conn.Close()
	}
}

// writable notes that h takes writes. On the first such news in the
// watch r, found is called first, so that what it does (a Reset of the
// pool) comes before any attempt is let through, and a parked connection
// asks at once; then attempts prefer h, and admit lets them through.
func (w *primaryWatch) writable(r *watchRun, h *watchedHost) {
	if hostState(h.state.Load()) == hostWritable {
		return
	}
	r.foundOnce.Do(func() {
		w.found(r.refused.Load())
		close(r.found)
	})
	if hostState(h.state.Swap(int32(hostWritable))) != hostWritable {
		w.preferred.Store(&h.addr)
		w.logger.Info("respool: a listed server takes writes", slog.String("pool", w.name), slog.String("server", h.addr))
	}
}

// parkOn restricts cc, the config of the parked connection's attempt
// (a context from park), to its host, and makes its ValidateConnect
// wait, asking every watchPoll (pgReadOnlyQuery), until the server takes
// writes, then run the DSN's own check (target_session_attrs), if any.
func parkOn(ctx context.Context, cc *pgconn.Config) {
	ph, ok := ctx.Value(parkedHostKey{}).(parkedHost)
	if !ok {
		return
	}
	for addr, mine := range byHost(cc) {
		if addr == ph.addr {
			cc.Host, cc.Port, cc.TLSConfig, cc.Fallbacks = mine[0].Host, mine[0].Port, mine[0].TLSConfig, mine[1:]
			break
		}
	}
	validate := cc.ValidateConnect
	cc.ValidateConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
		tick := ph.clock.NewTicker(watchPoll)
		defer tick.Stop()
		found := ph.found // closed when the watch finds a host taking writes: ask at once, once
		for {
			ro, err := queryReadOnly(ctx, pc)
			if err != nil {
				return err
			}
			if !ro {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C():
			case <-found:
				found = nil
			}
		}
		if validate != nil {
			return validate(ctx, pc)
		}
		return nil
	}
}

// end ends the watch r (nil: the current one).
func (w *primaryWatch) end(r *watchRun) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := w.run.Load()
	if cur == nil || r != nil && cur != r {
		return
	}
	cur.cancel()
	w.run.Store(nil)
	w.dropParked()
}

// close ends the watch and waits for its goroutines; no watch starts after.
func (w *primaryWatch) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.end(nil)
	w.wg.Wait()
}

// admit is asked before a connection attempt dials: nil, or, while no host
// is known to take writes or to refuse connections (each is unreachable,
// read-only, or not yet seen since an attempt failed and started the
// watch), a rejection matching ErrNoWritableServer whose RetryAfter is the
// next look.
func (w *primaryWatch) admit() error {
	r := w.run.Load()
	if r == nil {
		return nil
	}
	now := w.clock.Now()
	w.asked.Store(now.UnixNano())
	var b strings.Builder
	for i, h := range w.hosts {
		s := hostState(h.state.Load())
		if s == hostWritable || s == hostRefusing {
			return nil
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", h.addr, s)
	}
	r.refused.Store(true)
	return resil.Reject("failover", w.name, &noWritableError{hosts: b.String()}, now, now.Add(watchPoll))
}

// noWritableError is ErrNoWritableServer with what each host was found to be.
type noWritableError struct{ hosts string }

func (e *noWritableError) Error() string        { return ErrNoWritableServer.Error() + " (" + e.hosts + ")" }
func (e *noWritableError) Is(target error) bool { return target == ErrNoWritableServer }

// preferredHostKey carries, in a connection attempt's context, the
// address of the host the watch found taking writes: the attempt dials it
// first (see preferHost).
type preferredHostKey struct{}

// prefer returns ctx carrying the host last found taking writes, if any:
// a dead host listed before it (a failed primary) is then not dialed
// first by every new connection, which, where the host does not refuse
// but drops the packets, would wait out its connect timeout each time.
func (w *primaryWatch) prefer(ctx context.Context) context.Context {
	if addr := w.preferred.Load(); addr != nil {
		return context.WithValue(ctx, preferredHostKey{}, *addr)
	}
	return ctx
}

// forget drops the preferred host: the DSN's order again.
func (w *primaryWatch) forget() { w.preferred.Store(nil) }

// preferHost moves the entries of the host ctx names (see prefer) to the
// front of cc's hosts, the others keeping their order, so that pgx dials
// it first.
func preferHost(ctx context.Context, cc *pgconn.Config) {
	addr, _ := ctx.Value(preferredHostKey{}).(string)
	if addr == "" || len(cc.Fallbacks) == 0 {
		return
	}
	all := entries(cc)
	sorted := make([]*pgconn.FallbackConfig, 0, len(all))
	for _, first := range []bool{true, false} {
		for _, e := range all {
			if _, a := pgconn.NetworkAddress(e.Host, e.Port); (a == addr) == first {
				sorted = append(sorted, e)
			}
		}
	}
	cc.Host, cc.Port, cc.TLSConfig, cc.Fallbacks = sorted[0].Host, sorted[0].Port, sorted[0].TLSConfig, sorted[1:]
}

// entries returns cc's hosts as pgx tries them: its own, then its
// fallbacks (with sslmode=prefer, each host twice: with TLS, then without).
func entries(cc *pgconn.Config) []*pgconn.FallbackConfig {
	return append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
}

// byHost returns cc's entries by address (host:port), each host's in the
// order pgx tries them, as an iterator in the order of the hosts' first
// entries.
func byHost(cc *pgconn.Config) iter.Seq2[string, []*pgconn.FallbackConfig] {
	return func(yield func(string, []*pgconn.FallbackConfig) bool) {
		var order []string
		groups := map[string][]*pgconn.FallbackConfig{}
		for _, e := range entries(cc) {
			_, a := pgconn.NetworkAddress(e.Host, e.Port)
			if groups[a] == nil {
				order = append(order, a)
			}
			groups[a] = append(groups[a], e)
		}
		for _, a := range order {
			if !yield(a, groups[a]) {
				return
			}
		}
	}
}

// watch watches one host for the run r: it holds a session to it, dialed
// again every watchRedial while it cannot be had, and asks it every
// watchPoll whether it takes writes.
func (w *primaryWatch) watch(r *watchRun, h *watchedHost) {
	var conn *pgconn.PgConn
	defer func() {
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
			_ = conn.Close(ctx)
			cancel()
		}
	}()
	tick := w.clock.NewTicker(watchPoll)
	defer tick.Stop()
	var dialed time.Time
	for {
		if conn == nil && (dialed.IsZero() || w.clock.Since(dialed) >= watchRedial) {
			dialed = w.clock.Now()
			ctx, cancel := context.WithTimeout(r.ctx, watchTimeout)
			c, err := w.connect(ctx, h)
			cancel()
			switch {
			case r.ctx.Err() != nil:
				if c != nil {
					conn = c // closed by the deferred call
				}
				return
			case err == nil:
				conn = c
			case unreachable(err):
				h.state.Store(int32(hostUnreachable))
			default: // the server answered: the attempts will tell why
				h.state.Store(int32(hostRefusing))
			}
		}
		if conn != nil {
			ctx, cancel := context.WithTimeout(r.ctx, watchTimeout)
			ro, err := queryReadOnly(ctx, conn)
			cancel()
			switch {
			case r.ctx.Err() != nil:
				return
			case err != nil:
				_ = conn.Close(context.Background()) // broken: it closes at once
				conn = nil
				h.state.Store(int32(hostUnreachable))
			case ro:
				h.state.Store(int32(hostReadOnly))
				w.park(r, h)
			default:
				w.writable(r, h)
			}
		}
		if w.clock.Since(time.Unix(0, w.asked.Load())) >= watchIdle {
			w.end(r)
			return
		}
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// connect opens the watch's session to h: with Config.PgxBeforeConnect,
// on a copy of h's config that the hook has had, as every connection of
// the pool does (a rotated password, a fresh token).
func (w *primaryWatch) connect(ctx context.Context, h *watchedHost) (*pgconn.PgConn, error) {
	cfg := h.cfg
	if w.hook != nil {
		cfg = cfg.Copy()
		if err := w.hook(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return pgconn.ConnectConfig(ctx, &cfg.Config)
}

// serverGone reports whether err, a statement's, says the connection to
// the server was lost: the server shut the session down (57P01
// admin_shutdown, 57P02 crash_shutdown, as pg_ctl stop and a crash do), or
// the connection broke without a word (dbguard's connection and ambiguous
// classes). Not a session the server ended alone (57P05
// idle_session_timeout, 25P03, 57P04 database_dropped: another code), nor
// a statement ended by its caller's deadline or cancel: the server is
// there.
func serverGone(err error) bool {
	v := dbguard.Classify(err)
	switch {
	case v.Timeout || v.Canceled:
		return false
	case v.Code != "":
		return v.Code == "57P01" || v.Code == "57P02"
	}
	return v.Class == dbguard.ClassConnection || v.Class == dbguard.ClassAmbiguous
}

// unreachable reports whether err, a failed connection's, says the server
// was not reached, dropped the connection, or is going away or not yet
// serving (57P01-57P03: shutting down, starting up), rather than refused
// it (a PostgreSQL error: authentication, too many connections).
func unreachable(err error) bool {
	v := dbguard.Classify(err)
	return v.Class == dbguard.ClassConnection || v.Class == dbguard.ClassAmbiguous || v.Timeout || v.Code == "57P03"
}

// queryReadOnly asks conn's server whether it takes no writes from a new
// session (pgReadOnlyQuery).
func queryReadOnly(ctx context.Context, conn *pgconn.PgConn) (bool, error) {
	res := conn.ExecParams(ctx, pgReadOnlyQuery, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return false, res.Err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return false, fmt.Errorf("respool: %q returned %d rows", pgReadOnlyQuery, len(res.Rows))
	}
	return string(res.Rows[0][0]) == "t", nil
}
