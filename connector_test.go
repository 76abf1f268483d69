package respool

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
)

// This file tests Connector and Driver on go-sqlmock ("sqlmock"), the real
// driver underneath, and on test connectors for the faults sqlmock cannot
// make: distinct physical connections, ResetSession and IsValid failures,
// typed connection errors. Its helpers are shared with conn_test.go.

// mockSeq makes each sqlmock DSN unique: sqlmock refuses a DSN in use, and
// go test -count=N runs each test N times in one process.
var mockSeq atomic.Int64

// mockDB is one sqlmock connection, reachable through the "sqlmock" driver
// under dsn. sqlmock keeps one connection per DSN: every Open of dsn returns
// it, and every Close of it counts as one close.
type mockDB struct {
	dsn  string
	mock sqlmock.Sqlmock
	drv  sqldriver.Driver // sqlmock's driver
}

// newMock returns a sqlmock that matches queries exactly. Its *sql.DB (which
// keeps the DSN registered while respool opens it) is closed when the test
// ends.
func newMock(t *testing.T) *mockDB {
	t.Helper()
	return newMockWith(t, func(dsn string) (*sql.DB, sqlmock.Sqlmock, error) {
		return sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	})
}

// newMockWith is newMock with the sqlmock made by open (for options).
func newMockWith(t *testing.T, open func(dsn string) (*sql.DB, sqlmock.Sqlmock, error)) *mockDB {
	t.Helper()
	dsn := fmt.Sprintf("respool-sqlmock-%d", mockSeq.Add(1))
	db, mock, err := open(dsn)
	if err != nil {
		t.Fatalf("sqlmock: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() }) // sqlmock reports the unexpected Close
	return &mockDB{dsn: dsn, mock: mock, drv: db.Driver()}
}

// met fails the test if an expectation of m was not met.
func (m *mockDB) met(t *testing.T) {
	t.Helper()
	if err := m.mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// metOnceClosed is met for an expected Close, which a closing pool does in
// the background: it waits for the expectations to be met, at most
// settleTimeout.
func (m *mockDB) metOnceClosed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for m.mock.ExpectationsWereMet() != nil && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	m.met(t)
}

// newTestConnector makes a Connector for cfg and closes it when the test
// ends.
func newTestConnector(t testing.TB, cfg Config) *Connector {
	t.Helper()
	if cfg.Pool.Logger == nil { // sqlmock fails every Close it was not told to expect, which the pool logs
		cfg.Pool.Logger = testLogger(t)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Connector.Close: %v", err)
		}
	})
	return c
}

// openDB returns a *sql.DB on a Connector for cfg; both are closed when the
// test ends.
func openDB(t testing.TB, cfg Config) (*sql.DB, *Connector) {
	t.Helper()
	c := newTestConnector(t, cfg)
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db, c
}

// openMockDB returns a *sql.DB whose connections come from m through
// respool's pool configured by pc.
func openMockDB(t *testing.T, m *mockDB, pc pool.Config) (*sql.DB, *Connector) {
	t.Helper()
	return openDB(t, Config{DriverName: "sqlmock", DSN: m.dsn, Pool: pc})
}

// queryInt runs query, which must return one integer.
func queryInt(ctx context.Context, db *sql.DB, query string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, query).Scan(&n)
	return n, err
}

// expectInt has m answer query with the integer n.
func (m *mockDB) expectInt(query string, n int) {
	m.mock.ExpectQuery(query).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(n))
}

// faultConnector is a driver.Connector for faults sqlmock cannot make. Each
// Connect opens m's sqlmock connection and wraps it in a new faultConn, so
// that physical connections can be told apart and broken one at a time, and
// ResetSession and IsValid (which sqlmock does not implement) can fail.
type faultConnector struct {
	m      *mockDB
	legacy bool // hand out legacyConns: driver.Conn only

	mu     sync.Mutex
	conns  []*faultConn // every connection made, in order; guarded by mu
	served []int        // the id of the connection of each query and exec; guarded by mu
}

func (fc *faultConnector) Connect(context.Context) (sqldriver.Conn, error) {
	inner, err := fc.m.drv.Open(fc.m.dsn)
	if err != nil {
		return nil, err
	}
	fc.mu.Lock()
	c := &faultConn{fc: fc, id: len(fc.conns) + 1, inner: inner}
	c.valid.Store(true)
	fc.conns = append(fc.conns, c)
	fc.mu.Unlock()
	if fc.legacy {
		return legacyConn{c}, nil
	}
	return c, nil
}

func (fc *faultConnector) Driver() sqldriver.Driver { return fc.m.drv }

// conn returns the connection with id (1 for the first made).
func (fc *faultConnector) conn(t *testing.T, id int) *faultConn {
	t.Helper()
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if id < 1 || id > len(fc.conns) {
		t.Fatalf("connection %d not made; %d made", id, len(fc.conns))
	}
	return fc.conns[id-1]
}

func (fc *faultConnector) made() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.conns)
}

func (fc *faultConnector) servedBy() []int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]int(nil), fc.served...)
}

// faultConn is sqlmock's connection with the optional interfaces a real
// driver has, and knobs to make them fail.
type faultConn struct {
	fc    *faultConnector
	id    int
	inner sqldriver.Conn // sqlmock's connection

	valid  atomic.Bool // what IsValid reports
	dead   atomic.Bool // every operation fails with driver.ErrBadConn, the server having gone
	closed atomic.Bool

	mu         sync.Mutex
	resetErr   error               // what ResetSession returns; guarded by mu
	resetHangs bool                // ResetSession waits for its context to end, as on a stopped network; guarded by mu
	resets     []context.Context   // of every ResetSession call; guarded by mu
	txOpts     sqldriver.TxOptions // of the last BeginTx; guarded by mu
	begun      int                 // BeginTx calls; guarded by mu
}

var (
	_ sqldriver.Conn               = (*faultConn)(nil)
	_ sqldriver.ConnBeginTx        = (*faultConn)(nil)
	_ sqldriver.ConnPrepareContext = (*faultConn)(nil)
	_ sqldriver.ExecerContext      = (*faultConn)(nil)
	_ sqldriver.QueryerContext     = (*faultConn)(nil)
	_ sqldriver.Pinger             = (*faultConn)(nil)
	_ sqldriver.SessionResetter    = (*faultConn)(nil)
	_ sqldriver.Validator          = (*faultConn)(nil)
	_ sqldriver.NamedValueChecker  = (*faultConn)(nil)
)

func (c *faultConn) setResetErr(err error) {
	c.mu.Lock()
	c.resetErr = err
	c.mu.Unlock()
}

func (c *faultConn) lastTx() (sqldriver.TxOptions, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txOpts, c.begun
}

func (c *faultConn) serve() error {
	c.fc.mu.Lock()
	c.fc.served = append(c.fc.served, c.id)
	c.fc.mu.Unlock()
	if c.dead.Load() {
		return sqldriver.ErrBadConn
	}
	return nil
}

func (c *faultConn) Prepare(query string) (sqldriver.Stmt, error) {
	if c.dead.Load() {
		return nil, sqldriver.ErrBadConn
	}
	return c.inner.Prepare(query)
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (sqldriver.Stmt, error) {
	if c.dead.Load() {
		return nil, sqldriver.ErrBadConn
	}
	return c.inner.(sqldriver.ConnPrepareContext).PrepareContext(ctx, query)
}

// Close closes the connection. sqlmock's Close error (a Close it was not
// told to expect) is dropped: closed records the call instead.
func (c *faultConn) Close() error {
	c.closed.Store(true)
	_ = c.inner.Close()
	return nil
}

// Begin is driver.Conn's; database/sql calls BeginTx.
func (c *faultConn) Begin() (sqldriver.Tx, error) {
	return c.BeginTx(context.Background(), sqldriver.TxOptions{})
}

func (c *faultConn) BeginTx(ctx context.Context, opts sqldriver.TxOptions) (sqldriver.Tx, error) {
	c.mu.Lock()
	c.txOpts = opts
	c.begun++
	c.mu.Unlock()
	if c.dead.Load() {
		return nil, sqldriver.ErrBadConn
	}
	tx, err := c.inner.(sqldriver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return faultTx{c: c, inner: tx}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	if err := c.serve(); err != nil {
		return nil, err
	}
	return c.inner.(sqldriver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Rows, error) {
	if err := c.serve(); err != nil {
		return nil, err
	}
	return c.inner.(sqldriver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *faultConn) Ping(ctx context.Context) error {
	if c.dead.Load() {
		return sqldriver.ErrBadConn
	}
	return c.inner.(sqldriver.Pinger).Ping(ctx)
}

func (c *faultConn) CheckNamedValue(nv *sqldriver.NamedValue) error {
	return c.inner.(sqldriver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *faultConn) ResetSession(ctx context.Context) error {
	c.mu.Lock()
	c.resets = append(c.resets, ctx)
	hangs, err := c.resetHangs, c.resetErr
	c.mu.Unlock()
	if hangs {
		<-ctx.Done()
		return sqldriver.ErrBadConn // as pgx reports a ping cut short
	}
	return err
}

// resetCalls returns the contexts of the ResetSession calls so far.
func (c *faultConn) resetCalls() []context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]context.Context(nil), c.resets...)
}

func (c *faultConn) setResetHangs() {
	c.mu.Lock()
	c.resetHangs = true
	c.mu.Unlock()
}

func (c *faultConn) IsValid() bool { return c.valid.Load() }

// faultTx is sqlmock's transaction on a faultConn: it fails with
// driver.ErrBadConn once the connection is dead.
type faultTx struct {
	c     *faultConn
	inner sqldriver.Tx
}

func (tx faultTx) Commit() error {
	if tx.c.dead.Load() {
		return sqldriver.ErrBadConn
	}
	return tx.inner.Commit()
}

func (tx faultTx) Rollback() error {
	if tx.c.dead.Load() {
		return sqldriver.ErrBadConn
	}
	return tx.inner.Rollback()
}

// legacyConn is a connection of a driver that has only driver.Conn: no
// BeginTx, no context methods, no NamedValueChecker.
type legacyConn struct{ c *faultConn }

func (l legacyConn) Prepare(query string) (sqldriver.Stmt, error) { return l.c.inner.Prepare(query) }
func (l legacyConn) Close() error                                 { return l.c.Close() }

// Begin is the only way to start a transaction on a legacyConn.
func (l legacyConn) Begin() (sqldriver.Tx, error) {
	//lint:ignore SA1019 a driver with nothing newer is what this models
	return l.c.inner.Begin()
}

// dialError is the typed error a real driver returns when it cannot
// connect, as *mysql.MySQLError or *pgconn.ConnectError are.
type dialError struct{ Addr string }

func (e *dialError) Error() string { return "dial " + e.Addr + ": connection refused" }

// refusingConnector fails every Connect with err.
type refusingConnector struct {
	err   error
	calls atomic.Int64
}

func (c *refusingConnector) Connect(context.Context) (sqldriver.Conn, error) {
	c.calls.Add(1)
	return nil, c.err
}

func (c *refusingConnector) Driver() sqldriver.Driver { return echoDriver{} }

// echoDriver's errors echo the DSN, password included, as careless drivers'
// errors do.
type echoDriver struct{}

const echoDriverName = "respool-echo-test"

func init() { sql.Register(echoDriverName, echoDriver{}) }

var _ sqldriver.DriverContext = echoDriver{}

func (echoDriver) Open(dsn string) (sqldriver.Conn, error) { return nil, &echoError{DSN: dsn} }

func (echoDriver) OpenConnector(dsn string) (sqldriver.Connector, error) {
	return nil, &echoError{DSN: dsn}
}

type echoError struct{ DSN string }

func (e *echoError) Error() string { return "echo: cannot use " + e.DSN }

// settleTimeout bounds waitStats. It is no sleep: waitStats returns as soon
// as the pool gets there, and fails the test if it never does.
const settleTimeout = 10 * time.Second

// waitStats waits until ok holds for c's pool Stats and returns them; it
// fails the test after settleTimeout. Stats lag a Discard or a GiveBack of
// an invalid connection: the pool destroys connections in goroutines of
// their own, which count the destroy and then tell the actor, which frees
// the slot (Total).
func waitStats(t *testing.T, c *Connector, ok func(s pool.Stats) bool) pool.Stats {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		s := c.Stats()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Errorf("pool Stats not as wanted after %v", settleTimeout)
			return s
		}
		runtime.Gosched()
	}
}

// waitForWaiting returns once n callers wait in c's pool, or ends the test
// after settleTimeout.
func waitForWaiting(t *testing.T, c *Connector, n int) {
	t.Helper()
	if s := waitStats(t, c, func(s pool.Stats) bool { return s.Waiting == n }); s.Waiting != n {
		t.Fatalf("%d callers wait in the pool; want %d", s.Waiting, n)
	}
}

func TestOnePoolNotTwo(t *testing.T) {
	m := newMock(t)
	const n = 5
	for i := range n {
		m.expectInt("SELECT n", i)
	}
	m.mock.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
	db, c := openMockDB(t, m, pool.Config{MaxObjects: 4})
	ctx := context.Background()

	for i := range n {
		got, err := queryInt(ctx, db, "SELECT n")
		if err != nil || got != i {
			t.Fatalf("query %d = %d, %v; want %d", i, got, err, i)
		}
		// database/sql may keep an idle shell; the connection is in respool's pool.
		if s := c.Stats(); s.Idle != 1 || s.InUse != 0 {
			t.Fatalf("after query %d: respool's pool has %d idle, %d in use; want 1, 0 (the connection back in respool's pool)",
				i, s.Idle, s.InUse)
		}
	}
	if _, err := db.ExecContext(ctx, "UPDATE t SET n = n + 1"); err != nil {
		t.Fatalf("exec: %v", err)
	}
	m.met(t)

	s := c.Stats()
	if s.Takes != n+1 || s.Creates != 1 {
		t.Errorf("pool Takes %d, Creates %d; want %d, 1 (one physical connection reused)", s.Takes, s.Creates, n+1)
	}
	if s.Total != 1 || s.Idle != 1 || s.InUse != 0 {
		t.Errorf("pool Total %d, Idle %d, InUse %d; want 1, 1, 0", s.Total, s.Idle, s.InUse)
	}
}

func TestConnectCreateFailureIsTheDriversError(t *testing.T) {
	want := &dialError{Addr: "db.example.com:5432"}
	rc := &refusingConnector{err: want}
	db, c := openDB(t, Config{Connector: rc})

	_, err := db.ExecContext(context.Background(), "UPDATE t SET n = 1")
	if err == nil {
		t.Fatal("exec on a refusing connector succeeded")
	}
	got, ok := err.(*dialError)
	if !ok || got != want {
		t.Fatalf("error %T %q; want the driver's own *dialError, unwrapped", err, err)
	}
	if n := rc.calls.Load(); n != 1 {
		t.Errorf("Connect called %d times; want 1 (not ErrBadConn: database/sql does not retry)", n)
	}
	s := c.Stats()
	if s.CreateFailures != 1 || s.Creates != 0 || s.Total != 0 {
		t.Errorf("pool CreateFailures %d, Creates %d, Total %d; want 1, 0, 0", s.CreateFailures, s.Creates, s.Total)
	}

	// Through Connector.Connect directly too: while the pool backs off with
	// nothing alive, the next take fails fast with the same failure,
	// without an attempt.
	_, err = c.Connect(context.Background())
	var ce *pool.CreateError
	if !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, want) {
		t.Errorf("Connect = %v; want a failed-fast *pool.CreateError of the driver's error", err)
	}
	if n := rc.calls.Load(); n != 1 {
		t.Errorf("Connect called %d times; want 1 (the pool backs off)", n)
	}
}

func TestQueueFull(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	db, c := openMockDB(t, m, pool.Config{MaxObjects: 1, MaxQueueSize: 1})
	ctx := context.Background()

	held, err := db.Conn(ctx) // the pool's only connection
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	queued := make(chan error, 1)
	go func() { // the second caller waits in the pool's queue
		n, err := queryInt(ctx, db, "SELECT 1")
		if err == nil && n != 1 {
			err = fmt.Errorf("queued query = %d; want 1", n)
		}
		queued <- err
	}()
	waitForWaiting(t, c, 1)

	_, err = queryInt(ctx, db, "SELECT 1") // the third finds the queue full
	if !errors.Is(err, pool.ErrQueueFull) {
		t.Fatalf("third caller: %v; want an error matching pool.ErrQueueFull", err)
	}
	if want := "1 caller already waiting (MaxQueueSize 1, MaxObjects 1)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q; want it to say %q", err, want)
	}

	if err := held.Close(); err != nil { // hand the connection to the waiter
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued caller: %v", err)
	}
	m.met(t)
	s := c.Stats()
	if s.QueueFull != 1 || s.Creates != 1 || s.Takes != 2 {
		t.Errorf("pool QueueFull %d, Creates %d, Takes %d; want 1, 1, 2", s.QueueFull, s.Creates, s.Takes)
	}
}

// Pool.AcquireTimeout (respool_acquire_timeout) bounds the wait for a
// connection apart from the caller's context: the caller gets an error that
// matches pool.ErrAcquireTimeout and names the bound, after one wait, whether
// database/sql reuses one of its idle shells or asks for a new connection.
// A caller whose own context ends first gets the context's error.
func TestAcquireTimeout(t *testing.T) {
	for _, path := range []string{"idle shell", "Connect"} {
		t.Run(path, func(t *testing.T) {
			m := newMock(t)
			m.expectInt("SELECT 1", 1)
			const conns = 2
			// MinIdle makes the connections in the background: no take
			// below waits for a creation, which could outlast the bound on
			// a loaded machine.
			db, c := openMockDB(t, m, pool.Config{MaxObjects: conns, MinIdle: conns, AcquireTimeout: 20 * time.Millisecond})
			waitStats(t, c, func(s pool.Stats) bool { return s.Idle == conns })
			ctx := context.Background()
			if path == "Connect" {
				db.SetMaxIdleConns(-1) // no shell kept: every use calls Connect
			} else {
				var shells []*sql.Conn // database/sql keeps them idle once closed
				for range conns {
					sc, err := db.Conn(ctx)
					if err != nil {
						t.Fatal(err)
					}
					shells = append(shells, sc)
				}
				for _, sc := range shells {
					sc.Close()
				}
				if st := db.Stats(); st.Idle != conns {
					t.Fatalf("database/sql keeps %d idle shells; want %d", st.Idle, conns)
				}
			}
			var held []pool.Handle[sqldriver.Conn] // every connection, outside database/sql
			for range conns {
				h, err := c.pool.Take(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, h)
			}

			_, err := queryInt(ctx, db, "SELECT 1")
			var timeout interface{ Timeout() bool }
			if !errors.Is(err, pool.ErrAcquireTimeout) || !errors.As(err, &timeout) || !timeout.Timeout() ||
				!strings.Contains(err.Error(), "AcquireTimeout 20ms") {
				t.Fatalf("query on a full pool: %v; want an error matching pool.ErrAcquireTimeout, a timeout, naming the 20ms bound", err)
			}
			if s := c.Stats(); s.AcquireTimeouts != 1 {
				t.Errorf("pool AcquireTimeouts %d; want 1 (one wait per query, not one per retry of database/sql)", s.AcquireTimeouts)
			}

			// The caller's context ends while it waits, before the bound.
			c2 := newTestConnector(t, Config{DriverName: "sqlmock", DSN: m.dsn,
				Pool: pool.Config{MaxObjects: 1, AcquireTimeout: time.Hour}})
			db2 := sql.OpenDB(c2)
			defer db2.Close()
			h2, err := c2.pool.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithCancel(ctx)
			res := make(chan error, 1)
			go func() {
				_, err := queryInt(cctx, db2, "SELECT 1")
				res <- err
			}()
			waitForWaiting(t, c2, 1)
			cancel()
			if err := <-res; !errors.Is(err, context.Canceled) || errors.Is(err, pool.ErrAcquireTimeout) {
				t.Errorf("query whose context ended while it waited: %v; want the context's error", err)
			}
			_ = h2.GiveBack()

			for _, h := range held {
				if err := h.GiveBack(); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := queryInt(ctx, db, "SELECT 1"); err != nil || n != 1 {
				t.Fatalf("query once connections are back = %d, %v", n, err)
			}
			m.met(t)
		})
	}
}

func TestDBCloseClosesThePool(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	db, c := openMockDB(t, m, pool.Config{MaxObjects: 2})
	ctx := context.Background()
	if _, err := queryInt(ctx, db, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Total != 1 || s.Idle != 1 {
		t.Fatalf("before Close: Total %d, Idle %d; want 1, 1", s.Total, s.Idle)
	}

	if err := db.Close(); err != nil {
		t.Fatalf("db.Close: %v", err)
	}
	// Gauges are read one at a time (pool.Stats): Idle, read first, may
	// still count the connection whose destruction Total, read after, has
	// counted. Wait for a snapshot that has both.
	s := waitStats(t, c, func(s pool.Stats) bool { return s.Total == 0 && s.Idle == 0 })
	if d := s.Destroys.Closed; d != 1 {
		t.Errorf("Destroys.Closed = %d; want 1", d)
	}
	if _, err := c.Connect(ctx); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("Connect after db.Close = %v; want pool.ErrClosed", err)
	}
	m.met(t)
}

// db.Close returns at once, as with the plain drivers: the pool refuses new
// takes, closes its idle connections, and closes those in use as they come
// back.
func TestDBCloseReturnsAtOnce(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 2})
	ctx := context.Background()
	held, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := queryInt(ctx, db, "SELECT 1"); err != nil { // on a second connection, then idle
		t.Fatal(err)
	}
	inUse, idle := fc.conn(t, 1), fc.conn(t, 2)

	if err := db.Close(); err != nil { // with a connection in use
		t.Fatalf("db.Close: %v", err)
	}
	if _, err := c.pool.TryTake(); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("TryTake after db.Close = %v; want pool.ErrClosed", err)
	}
	waitStats(t, c, func(s pool.Stats) bool { return s.Total == 1 })
	if !idle.closed.Load() || inUse.closed.Load() {
		t.Errorf("after db.Close: idle connection closed %v, connection in use closed %v; want true, false",
			idle.closed.Load(), inUse.closed.Load())
	}

	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	s := waitStats(t, c, func(s pool.Stats) bool { return s.Total == 0 })
	if s.Destroys.Closed != 2 || !inUse.closed.Load() {
		t.Errorf("after the connection came back: Total %d, Destroys.Closed %d, closed %v; want 0, 2, true",
			s.Total, s.Destroys.Closed, inUse.closed.Load())
	}
}

// With CloseTimeout, Close waits that long for connections in use.
func TestCloseTimeoutWaitsForConnectionsInUse(t *testing.T) {
	m := newMock(t)
	fc := &faultConnector{m: m}
	c := newTestConnector(t, Config{Connector: fc, CloseTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	dc, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with a connection in use past CloseTimeout = %v; want context.DeadlineExceeded", err)
	}
	if err := dc.Close(); err != nil {
		t.Fatal(err)
	}
	waitStats(t, c, func(s pool.Stats) bool { return s.Total == 0 })
	if !fc.conn(t, 1).closed.Load() {
		t.Error("the connection was not closed")
	}
}

func TestOpenDBAppliesTheDSNsPoolKeys(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.mock.ExpectClose() // by db.Close: the pool closes its connection
	db, c, err := OpenDB(m.dsn + "?respool_driver=sqlmock&respool_max_conns=3&respool_max_queue=7")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := c.pool.Config()
	if cfg.MaxObjects != 3 || cfg.MaxQueueSize != 7 {
		t.Errorf("pool MaxObjects %d, MaxQueueSize %d; want 3, 7", cfg.MaxObjects, cfg.MaxQueueSize)
	}
	if want := "respool(sqlmock)"; cfg.Name != want {
		t.Errorf("pool Name %q; want %q", cfg.Name, want)
	}
	if _, err := queryInt(context.Background(), db, "SELECT 1"); err != nil {
		t.Fatalf("query through the DSN's driver: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	m.metOnceClosed(t) // db.Close closes idle connections in the background
}

func TestDriverOpenIsUnpooled(t *testing.T) {
	m := newMock(t)
	m.mock.ExpectExec("UPDATE t SET n = 1").WillReturnResult(sqlmock.NewResult(0, 1))
	m.mock.ExpectClose()

	raw, err := sqlDriver{}.Open(m.dsn + "?respool_driver=sqlmock&respool_max_conns=2")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, pooled := raw.(*conn); pooled {
		t.Fatal("Driver.Open returned a pooled connection; want the real driver's")
	}
	ec, ok := raw.(sqldriver.ExecerContext)
	if !ok {
		t.Fatalf("%T has no ExecContext", raw)
	}
	r, err := ec.ExecContext(context.Background(), "UPDATE t SET n = 1", nil)
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		t.Errorf("RowsAffected = %d; want 1", n)
	}
	// sqlmock's Close succeeds only when expected: the caller closes the
	// real connection itself, no pool is in between.
	if err := raw.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	m.met(t)
}

func TestBadDSNIsRefused(t *testing.T) {
	const bad = "postgres://app@db.example.com/app?respool_max_conns=zero"
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v; want an error matching ErrInvalidConfig", what, err)
		}
		var de *DSNError
		if !errors.As(err, &de) || de.Key != "respool_max_conns" || de.Value != "zero" {
			t.Errorf("%s: %#v; want a *DSNError for respool_max_conns=zero", what, err)
		}
	}
	c, err := sqlDriver{}.OpenConnector(bad)
	if c != nil {
		t.Errorf("OpenConnector returned a connector with its error")
	}
	check("OpenConnector", err)
	_, err = sqlDriver{}.Open(bad)
	check("Open", err)
	_, err = sql.Open(driverName, bad)
	check("sql.Open", err)
	_, _, err = OpenDB(bad)
	check("OpenDB", err)
}

func TestNewConnectorRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{DriverName: "sqlmock", Connector: &refusingConnector{}},
		{DriverName: driverName},
		{DriverName: "sqlmock", Pool: pool.Config{MaxObjects: -1}},
		{DriverName: "sqlmock", InitSQL: []string{"SET a", " "}},
		{DriverName: "sqlmock", CloseTimeout: -time.Second},
	} {
		if c, err := NewConnector(cfg); !errors.Is(err, ErrInvalidConfig) {
			if c != nil {
				_ = c.Close()
			}
			t.Errorf("NewConnector(%v) = %v; want ErrInvalidConfig", &cfg, err)
		}
	}
	c, err := NewConnector(Config{DriverName: "no-such-driver"})
	if err == nil {
		_ = c.Close()
		t.Fatal("NewConnector with an unregistered driver succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-driver") {
		t.Errorf("error %q does not name the driver", err)
	}
}

// redactCases are DSNs of each form with the password "hunter2" and the
// same DSN as the echo of a careless driver should show it.
var redactCases = []struct{ name, dsn string }{
	{"url", "postgres://app:hunter2@db.example.com:5432/app?sslmode=disable"},
	{"keyword/value", "host=db.example.com user=app password=hunter2 dbname=app"},
	{"mysql", "app:hunter2@tcp(db.example.com:3306)/app?parseTime=true"},
}

func TestRedactErrorHidesThePassword(t *testing.T) {
	for _, tc := range redactCases {
		t.Run(tc.name, func(t *testing.T) {
			orig := &echoError{DSN: tc.dsn}
			err := secretsOf(tc.dsn).Redact(orig)
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("redacted error %q shows the password", err)
			}
			if !strings.Contains(err.Error(), dsnform.Redacted) {
				t.Errorf("redacted error %q does not show where the password was", err)
			}
			var ee *echoError
			if !errors.As(err, &ee) || ee != orig {
				t.Errorf("errors.As does not find the driver's error in %v", err)
			}
		})
	}
	plain := errors.New("no password here")
	if err := secretsOf(redactCases[0].dsn).Redact(plain); err != plain {
		t.Errorf("an error without the password was changed: %v", err)
	}
}

func TestRedactErrorHidesAnEncodedPassword(t *testing.T) {
	// A driver that echoes the DSN as given shows the password percent-encoded,
	// or as a query parameter of a URL.
	for _, dsn := range []string{
		"postgres://app:hunter2%21@db.example.com/app",
		"postgres://app@db.example.com/app?password=hunter2",
	} {
		err := secretsOf(dsn).Redact(&echoError{DSN: dsn})
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("redacted error %q shows the password", err)
		}
	}
}

func TestOpenConnectorErrorHidesThePassword(t *testing.T) {
	// sql.Open, which finds the driver by name, calls OpenConnector itself:
	// its error must be redacted too.
	for _, tc := range redactCases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error from a driver whose OpenConnector fails", what)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("%s: error %q shows the password", what, err)
				}
				var ee *echoError
				if !errors.As(err, &ee) {
					t.Errorf("%s: errors.As does not find the driver's *echoError in %v", what, err)
				}
			}
			cfg := Config{DriverName: echoDriverName, DSN: tc.dsn}
			c, err := NewConnector(cfg)
			if c != nil {
				_ = c.Close()
			}
			check("NewConnector", err)
			_, err = sql.Open(driverName, cfg.FormatDSN())
			check("sql.Open", err)
		})
	}
}
