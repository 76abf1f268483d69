package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"sync"
)

// fakeName is a driver for the unit tests: its connections record what
// reached them. A DSN containing "fail-open" makes Connect fail with an
// error that quotes the DSN, as a careless driver might.
const fakeName = "chaos-test-fake"

func init() { sql.Register(fakeName, fakeDriver{}) }

// fakeLog records the calls that reached fake connections, by DSN.
var fakeLog = struct {
	mu    sync.Mutex
	calls map[string][]string // guarded by mu
	open  map[string]int      // connections open, by DSN; guarded by mu
}{calls: map[string][]string{}, open: map[string]int{}}

func fakeCalls(dsn string) []string {
	fakeLog.mu.Lock()
	defer fakeLog.mu.Unlock()
	return append([]string(nil), fakeLog.calls[dsn]...)
}

func fakeOpen(dsn string) int {
	fakeLog.mu.Lock()
	defer fakeLog.mu.Unlock()
	return fakeLog.open[dsn]
}

type fakeDriver struct{}

func (fakeDriver) Open(dsn string) (driver.Conn, error) {
	if strings.Contains(dsn, "fail-open") {
		return nil, errors.New("fake: cannot open " + dsn)
	}
	fakeLog.mu.Lock()
	fakeLog.open[dsn]++
	fakeLog.mu.Unlock()
	return &fakeConn{dsn: dsn}, nil
}

type fakeConn struct {
	dsn    string
	closed bool
}

func (c *fakeConn) record(call string) error {
	fakeLog.mu.Lock()
	defer fakeLog.mu.Unlock()
	if c.closed {
		return driver.ErrBadConn
	}
	fakeLog.calls[c.dsn] = append(fakeLog.calls[c.dsn], call)
	return nil
}

func (c *fakeConn) Close() error {
	fakeLog.mu.Lock()
	defer fakeLog.mu.Unlock()
	if !c.closed {
		c.closed = true
		fakeLog.open[c.dsn]--
	}
	return nil
}

func (c *fakeConn) Prepare(query string) (driver.Stmt, error) {
	if err := c.record("prepare " + query); err != nil {
		return nil, err
	}
	return &fakeStmt{c: c, query: query}, nil
}

func (c *fakeConn) Begin() (driver.Tx, error) {
	if err := c.record("begin"); err != nil {
		return nil, err
	}
	return fakeTx{c}, nil
}

// ExecContext and QueryContext skip calls with arguments, as
// go-sql-driver/mysql does without interpolateParams: database/sql then
// prepares a statement.
func (c *fakeConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) > 0 {
		return nil, driver.ErrSkip
	}
	if err := c.record("exec " + query); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (c *fakeConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) > 0 {
		return nil, driver.ErrSkip
	}
	if err := c.record("query " + query); err != nil {
		return nil, err
	}
	return &fakeRows{}, nil
}

func (c *fakeConn) Ping(context.Context) error { return c.record("ping") }

type fakeTx struct{ c *fakeConn }

func (t fakeTx) Commit() error   { return t.c.record("commit") }
func (t fakeTx) Rollback() error { return t.c.record("rollback") }

type fakeStmt struct {
	c     *fakeConn
	query string
}

func (s *fakeStmt) Close() error  { return nil }
func (s *fakeStmt) NumInput() int { return -1 }
func (s *fakeStmt) Exec([]driver.Value) (driver.Result, error) {
	if err := s.c.record("stmt exec " + s.query); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (s *fakeStmt) Query([]driver.Value) (driver.Rows, error) {
	if err := s.c.record("stmt query " + s.query); err != nil {
		return nil, err
	}
	return &fakeRows{}, nil
}

// fakeRows has one row of one column, 1.
type fakeRows struct{ done bool }

func (r *fakeRows) Columns() []string { return []string{"n"} }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}
