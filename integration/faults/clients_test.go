package faults

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// poolSize is every client's pool size.
const poolSize = 10

// poolKeys are the respool keys of a pool of poolSize.
var poolKeys = "respool_max_conns=" + strconv.Itoa(poolSize)

var (
	onPostgres = []string{servers.KindPostgres}
	onMariaDB  = []string{servers.KindMariaDB}
	onBoth     = []string{servers.KindPostgres, servers.KindMariaDB}
)

// clients are the pools the suite measures, in the report's column order
// (per server). A new client, or respool with other keys, is one line.
var clients = []client{
	{name: "pgx stdlib", kinds: onPostgres, baseline: true, open: openSQL(poolSize)},
	{name: "pgxpool", kinds: onPostgres, open: openPgxpool(poolSize)},
	{name: "mysql", kinds: onMariaDB, baseline: true, open: openSQL(poolSize)},
	respoolClient("respool", poolKeys),
}

// client is a pool under test and how to open it on a server.
type client struct {
	name     string
	kinds    []string // the server kinds it runs on
	baseline bool     // the server's plain driver, which respool's targets compare with
	respool  bool     // issue 9's targets apply
	open     func(s *servers.Server) (pool, error)
	// openWith opens respool with more DSN keys (a scenario's respoolKeys);
	// nil for the other clients.
	openWith func(keys string) func(s *servers.Server) (pool, error)
}

func (c client) runsOn(kind string) bool { return slices.Contains(c.kinds, kind) }

// respoolClient is respool's database/sql driver opened as sql.Open
// ("respool", dsn+"&"+keys) opens it, then with the Config's fields edited
// in code, with the pool's log recorded.
func respoolClient(name, keys string, edits ...func(*respool.Config)) client {
	openWith := func(more string) func(s *servers.Server) (pool, error) {
		return openRespool(keys+"&"+more, edits)
	}
	return client{name: name, kinds: onBoth, respool: true, open: openRespool(keys, edits), openWith: openWith}
}

// openRespool opens respool with the DSN keys keys and the Config edits.
func openRespool(keys string, edits []func(*respool.Config)) func(s *servers.Server) (pool, error) {
	return func(s *servers.Server) (pool, error) {
		cfg, err := respool.ParseDSN(s.DSN() + "&" + keys) // both DSNs have a query already
		if err != nil {
			return nil, err
		}
		for _, edit := range edits {
			edit(cfg)
		}
		rec := new(recorder)
		cfg.Pool.Logger = slog.New(rec)
		c, err := respool.NewConnector(*cfg)
		if err != nil {
			return nil, err
		}
		return &sqlPool{db: sql.OpenDB(c), log: rec, conn: c}, nil
	}
}

// pool is what the suite needs of a client.
type pool interface {
	// query runs q, which returns one integer, and reads its row.
	query(ctx context.Context, q string) error
	// hold takes a connection and pings it; release gives it back.
	hold(ctx context.Context) (release func(), err error)
	// leak takes a connection and loses it the way how says, in a function
	// the report should name. undo gives it back when the suite keeps the
	// lost handles (pools that cannot notice a lost handle: they use no
	// finalizer or weak pointer, so keeping it changes nothing for them), so
	// that Close can finish; nil when the suite really dropped them.
	leak(ctx context.Context, how leakKind) (undo func(), err error)
	// logged returns the pool's log records so far, or nil for a pool whose
	// log the suite does not read.
	logged() []string
	// close closes the pool; it may block (pgxpool waits for every
	// connection), so the suite bounds it.
	close() error
}

type leakKind int

const (
	leakRows leakKind = iota // a query's rows never closed
	leakConn                 // a connection dropped with a query's rows open on it
)

func (k leakKind) String() string {
	if k == leakRows {
		return "rows never closed"
	}
	return "connection dropped with its rows open"
}

// openSQL opens a server's plain database/sql driver, pgx or mysql, with
// SetMaxOpenConns(size) and database/sql's other defaults.
func openSQL(size int) func(s *servers.Server) (pool, error) {
	return func(s *servers.Server) (pool, error) {
		db, err := sql.Open(s.DriverName(), s.DSN())
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(size)
		return &sqlPool{db: db, keep: true}, nil
	}
}

// sqlPool is a *sql.DB on any driver.
type sqlPool struct {
	db   *sql.DB
	keep bool               // keep lost handles for undo (see pool.leak)
	log  *recorder          // nil: the pool's log is not read
	conn *respool.Connector // respool's, for its Stats; nil for the others
}

// describe sums up what respool's pool and resilience did, for the test
// log; "" for the other pools.
func (p *sqlPool) describe() string {
	if p.conn == nil {
		return ""
	}
	s, r := p.conn.Stats(), p.conn.ResilienceStats()
	return fmt.Sprintf("pool: creates %d, create failures %d, failed fast %d, overloaded %d, back-pressure %d, effective size %d; "+
		"connection attempts %d (failed %d, retries %d); breaker %v, openings %d, rejected %d, statement failures %d; pauses %d",
		s.Creates, s.CreateFailures, s.FailedFast, s.Overloaded, s.BackPressureEvents, s.EffectiveMaxObjects,
		r.ConnectAttempts, r.ConnectFailures, r.Retry.Retries, r.Breaker.State, r.Breaker.Transitions, r.Breaker.Rejected,
		r.StatementFailures, r.Pause.Pauses)
}

func (p *sqlPool) query(ctx context.Context, q string) error {
	var n int64
	return p.db.QueryRowContext(ctx, q).Scan(&n)
}

func (p *sqlPool) hold(ctx context.Context) (func(), error) {
	c, err := p.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.PingContext(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return func() { _ = c.Close() }, nil
}

func (p *sqlPool) leak(ctx context.Context, how leakKind) (func(), error) {
	var undo func()
	var err error
	if how == leakRows {
		undo, err = loseSQLRows(p.db, p.keep)
	} else {
		undo, err = loseSQLConn(ctx, p.db, p.keep)
	}
	return undo, err
}

// loseSQLRows runs a query whose context cannot end and drops its rows
// without Close.
//
//go:noinline
func loseSQLRows(db *sql.DB, keep bool) (func(), error) {
	rows, err := db.QueryContext(context.Background(), "SELECT 1")
	if err != nil {
		return nil, err
	}
	rows.Next()
	if keep {
		return func() { _ = rows.Close() }, nil
	}
	return nil, nil
}

// loseSQLConn takes a *sql.Conn, runs a query on it whose context cannot
// end and drops both without Close.
//
//go:noinline
func loseSQLConn(ctx context.Context, db *sql.DB, keep bool) (func(), error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.QueryContext(context.Background(), "SELECT 1")
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	rows.Next()
	if keep {
		return func() { _, _ = rows.Close(), c.Close() }, nil
	}
	return nil, nil
}

func (p *sqlPool) logged() []string {
	if p.log == nil {
		return nil
	}
	return p.log.records()
}

func (p *sqlPool) close() error { return p.db.Close() }

// openPgxpool opens pgxpool with MaxConns size and its other defaults.
func openPgxpool(size int) func(s *servers.Server) (pool, error) {
	return func(s *servers.Server) (pool, error) {
		cfg, err := pgxpool.ParseConfig(s.PgxDSN())
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = int32(size)
		p, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			return nil, err
		}
		return &pgxPool{p: p}, nil
	}
}

type pgxPool struct{ p *pgxpool.Pool }

func (p *pgxPool) query(ctx context.Context, q string) error {
	var n int64
	return p.p.QueryRow(ctx, q).Scan(&n)
}

func (p *pgxPool) hold(ctx context.Context) (func(), error) {
	c, err := p.p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.Ping(ctx); err != nil {
		c.Release()
		return nil, err
	}
	return c.Release, nil
}

// leak keeps the lost handles: pgxpool cannot notice one, and its Close
// waits for them.
func (p *pgxPool) leak(ctx context.Context, how leakKind) (func(), error) {
	if how == leakRows {
		return losePgxpoolRows(p.p)
	}
	return losePgxpoolConn(ctx, p.p)
}

//go:noinline
func losePgxpoolRows(p *pgxpool.Pool) (func(), error) {
	rows, err := p.Query(context.Background(), "SELECT 1")
	if err != nil {
		return nil, err
	}
	rows.Next()
	return rows.Close, nil
}

//go:noinline
func losePgxpoolConn(ctx context.Context, p *pgxpool.Pool) (func(), error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(context.Background(), "SELECT 1")
	if err != nil {
		c.Release()
		return nil, err
	}
	rows.Next()
	return func() { rows.Close(); c.Release() }, nil
}

func (p *pgxPool) logged() []string { return nil }

func (p *pgxPool) close() error {
	p.p.Close()
	return nil
}

// recorder is a slog.Handler that keeps every record as one line.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

func (r *recorder) records() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.lines...) // not nil: the log is read
}
