package multiproc

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/redisbudget"
)

// workerEnv holds a worker's config (JSON) in the environment of a test
// binary the parent runs as a worker (see TestWorkerProcess).
const workerEnv = "RESPOOL_MULTIPROC_WORKER"

// Modes: the client each worker process runs.
const (
	modeBudget    = "respool-budget" // respool, the pool sized to the budget, sharing it through Redis
	modeStatic    = "static-split"   // respool, each pool budget/processes connections, nothing shared
	modePgxpool   = "pgxpool"        // pgxpool, pool_max_conns budget/processes
	modePgBouncer = "pgbouncer"      // pgxpool (one connection a caller) through PgBouncer in transaction mode
)

// workerConfig is what a worker process is told through workerEnv.
type workerConfig struct {
	Index   int
	Mode    string
	Kind    string // servers.KindPostgres or servers.KindMariaDB
	DSN     string // the client's DSN, pool size and keys included
	Callers int    // callers started by "start"
	Hold    time.Duration

	// modeBudget: the Redis budget.
	Redis      string
	BudgetName string
	BudgetMax  int
	TTL        time.Duration
}

// stats is a worker's report of a window of load (see worker.stats).
type stats struct {
	Window    time.Duration
	Takes     int64 // statements that succeeded
	Errors    int64
	Refused   int64  // of the errors, the server's "too many connections" (53300, 1040)
	LastError string `json:",omitempty"`
	// Waits: each statement's latency less the statement's own hold.
	P50, P99, Max time.Duration
	Held          int // connections the client holds now (pool's count)
	// modeBudget: the budget's view.
	BudgetHeld   int
	Share        int // as the store last said
	Borrowed     int
	StoreDown    bool
	Unregistered int
	StoreErrors  uint64 // calls to Redis that failed, since the worker began
	// respool's pool, since the worker began.
	Creates, CreateFailures uint64
	Destroys                pool.DestroyCounts
}

// reply is a worker's answer to a command: one JSON line.
type reply struct {
	Err   string `json:",omitempty"`
	Stats *stats `json:",omitempty"`
}

// TestWorkerProcess is not a test: it is the body of a worker process, run
// by the parent (fleet_test.go) as this test binary with
// -test.run=^TestWorkerProcess$ and workerEnv set. It reads commands, one a
// line, on stdin and answers each with one JSON line on stdout:
//
//	start   start Callers callers, each running its statement in a loop; a new stats window
//	stats   the stats of the window since start or the last stats; a new window
//	stop    stop the callers (each ends its statement), then as stats
//	hold N  hold N connections (pinned, pinged) until stop or quit
//	quit    stop and close the client; the process exits
//
// It exits when stdin ends (the parent died) too.
func TestWorkerProcess(t *testing.T) {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		t.Skip("the body of a worker process (run by the multi-process tests)")
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("%s: %v", workerEnv, err)
	}
	w, err := newWorkerState(cfg)
	out := json.NewEncoder(os.Stdout)
	if err != nil {
		_ = out.Encode(reply{Err: err.Error()})
		t.Fatal(err)
	}
	defer w.close()
	_ = out.Encode(reply{}) // ready
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		r, quit := w.command(in.Text())
		if err := out.Encode(r); err != nil || quit {
			return
		}
	}
}

// workerState is a worker process's client and load.
type workerState struct {
	cfg workerConfig
	cl  client

	mu      sync.Mutex
	waits   []time.Duration // this window's, guarded by mu
	takes   int64
	errs    int64
	refused int64
	lastErr string
	window  time.Time

	stopLoad context.CancelFunc // nil while no load runs
	callers  sync.WaitGroup
	held     []func() // hold's connections
}

func newWorkerState(cfg workerConfig) (*workerState, error) {
	cl, err := openClient(cfg)
	if err != nil {
		return nil, err
	}
	return &workerState{cfg: cfg, cl: cl, window: time.Now()}, nil
}

func (w *workerState) command(line string) (r reply, quit bool) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return reply{Err: "empty command"}, false
	}
	switch f[0] {
	case "start":
		w.start()
	case "stats":
		r.Stats = w.stats()
	case "stop":
		w.stop()
		r.Stats = w.stats()
	case "hold":
		n, err := strconv.Atoi(f[len(f)-1])
		if err == nil {
			err = w.hold(n)
		}
		if err != nil {
			r.Err = err.Error()
		}
	case "quit":
		return reply{}, true
	default:
		r.Err = "unknown command " + strconv.Quote(line)
	}
	return r, false
}

// start starts the callers, each running one statement after another
// until stop.
func (w *workerState) start() {
	if w.stopLoad != nil {
		return
	}
	load, cancel := context.WithCancel(context.Background())
	w.stopLoad = cancel
	_ = w.stats() // a new window
	// stop lets each caller end its statement, or its wait for a
	// connection (respool_acquire_timeout bounds it): a cancelled
	// statement would send a cancel request (a connection to the server,
	// counted by the proxies), close a MariaDB connection, and may end
	// PgBouncer 1.18 (/work/notes/pgbouncer-findings.md).
	ctx := context.WithoutCancel(load)
	for range w.cfg.Callers {
		w.callers.Go(func() {
			for load.Err() == nil {
				w.run(ctx)
			}
		})
	}
}

// run runs one statement and records it.
func (w *workerState) run(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, statementBound)
	defer cancel()
	began := time.Now()
	err := w.cl.do(ctx, w.cfg.Hold)
	wait := max(time.Since(began)-w.cfg.Hold, 0)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs++
		if tooManyConnections(err) {
			w.refused++
		}
		w.lastErr = err.Error()
		return
	}
	w.takes++
	w.waits = append(w.waits, wait)
}

// tooManyConnections says err is the server's refusal of a connection
// beyond its max_connections.
func tooManyConnections(err error) bool {
	s := err.Error()
	return strings.Contains(s, "53300") || strings.Contains(s, "Error 1040") || strings.Contains(s, "too many clients")
}

func (w *workerState) stop() {
	if w.stopLoad != nil {
		w.stopLoad()
		w.callers.Wait()
		w.stopLoad = nil
	}
	for _, release := range w.held {
		release()
	}
	w.held = nil
}

// hold takes n connections and keeps them until stop.
func (w *workerState) hold(n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), statementBound)
	defer cancel()
	for range n {
		release, err := w.cl.hold(ctx)
		if err != nil {
			return err
		}
		w.held = append(w.held, release)
	}
	return nil
}

// stats returns the window's stats and begins a new window.
func (w *workerState) stats() *stats {
	w.mu.Lock()
	waits := w.waits
	s := &stats{Window: time.Since(w.window), Takes: w.takes, Errors: w.errs, Refused: w.refused, LastError: w.lastErr}
	w.waits, w.takes, w.errs, w.refused, w.lastErr, w.window = nil, 0, 0, 0, "", time.Now()
	w.mu.Unlock()
	slices.Sort(waits)
	if n := len(waits); n > 0 {
		s.P50, s.P99, s.Max = waits[n/2], waits[min(n*99/100, n-1)], waits[n-1]
	}
	s.Held = w.cl.held()
	if c, ok := w.cl.(*respoolClient); ok {
		ps := c.c.Stats()
		s.Creates, s.CreateFailures, s.Destroys = ps.Creates, ps.CreateFailures, ps.Destroys
	}
	if b, ok := w.cl.(interface{ budget() pool.BudgetStats }); ok {
		bs := b.budget()
		s.BudgetHeld, s.Share, s.Borrowed, s.StoreDown, s.Unregistered, s.StoreErrors = bs.Held, bs.Share, bs.Borrowed, bs.StoreDown, bs.Unregistered, bs.StoreErrors
	}
	return s
}

func (w *workerState) close() {
	w.stop()
	_ = w.cl.close()
}

// statementBound bounds each statement and each hold of a worker.
const statementBound = 10 * time.Second

// client is a worker's database client.
type client interface {
	do(ctx context.Context, hold time.Duration) error // one statement that lasts hold at the server
	hold(ctx context.Context) (release func(), err error)
	held() int // connections open (or being opened) now
	close() error
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openClient(cfg workerConfig) (client, error) {
	switch cfg.Mode {
	case modeBudget, modeStatic:
		return openRespool(cfg)
	case modePgxpool, modePgBouncer:
		p, err := pgxpool.New(context.Background(), cfg.DSN)
		if err != nil {
			return nil, err
		}
		return pgxClient{p}, nil
	}
	return nil, fmt.Errorf("unknown mode %q", cfg.Mode)
}

// respoolClient is respool through database/sql, with a Redis budget in
// modeBudget.
type respoolClient struct {
	kind string
	db   *sql.DB
	c    *respool.Connector
	b    *redisbudget.Budget // nil: no budget
	rdb  *redis.Client
}

func openRespool(cfg workerConfig) (client, error) {
	rc, err := respool.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	rc.Pool.Logger = quiet
	cl := &respoolClient{kind: cfg.Kind}
	if cfg.Mode == modeBudget {
		cl.rdb = redis.NewClient(&redis.Options{Addr: cfg.Redis, MaxRetries: -1, ContextTimeoutEnabled: true})
		cl.b, err = redisbudget.New(redisbudget.Config{Client: cl.rdb, Name: cfg.BudgetName, Max: cfg.BudgetMax, TTL: cfg.TTL, Logger: quiet})
		if err != nil {
			_ = cl.rdb.Close()
			return nil, err
		}
		rc.Pool.Budget = cl.b
	}
	if cl.c, err = respool.NewConnector(*rc); err != nil {
		_ = cl.close()
		return nil, err
	}
	cl.db = sql.OpenDB(cl.c)
	return cl, nil
}

func (c *respoolClient) do(ctx context.Context, hold time.Duration) error {
	_, err := c.db.ExecContext(ctx, sleepQuery(c.kind, hold))
	return err
}

func (c *respoolClient) hold(ctx context.Context) (func(), error) {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := conn.PingContext(ctx); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	return func() { _ = conn.Close() }, nil
}

func (c *respoolClient) held() int { return c.c.Stats().Total }

func (c *respoolClient) budget() pool.BudgetStats {
	if c.b == nil {
		return pool.BudgetStats{}
	}
	return c.b.Stats()
}

func (c *respoolClient) close() error {
	var errs []error
	if c.db != nil {
		errs = append(errs, c.db.Close())
	}
	if c.b != nil {
		errs = append(errs, c.b.Close(), c.rdb.Close())
	}
	return errors.Join(errs...)
}

// pgxClient is a pgxpool.
type pgxClient struct{ p *pgxpool.Pool }

func (c pgxClient) do(ctx context.Context, hold time.Duration) error {
	_, err := c.p.Exec(ctx, sleepQuery(servers.KindPostgres, hold))
	return err
}

func (c pgxClient) hold(ctx context.Context) (func(), error) {
	conn, err := c.p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Release()
		return nil, err
	}
	return conn.Release, nil
}

func (c pgxClient) held() int { return int(c.p.Stat().TotalConns()) }

func (c pgxClient) close() error { c.p.Close(); return nil }

// sleepQuery is a statement that lasts d at the server.
func sleepQuery(kind string, d time.Duration) string {
	secs := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	if kind == servers.KindPostgres {
		return "SELECT pg_sleep(" + secs + ")"
	}
	return "DO SLEEP(" + secs + ")"
}
