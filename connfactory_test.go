package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"testing"
)

// adapterConn is a driver.Conn with the optional interfaces the adapter uses.
type adapterConn struct {
	valid   bool
	pingErr error
	queried string
	closed  bool
}

func (c *adapterConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no") }
func (c *adapterConn) Close() error                        { c.closed = true; return nil }
func (c *adapterConn) Begin() (driver.Tx, error)           { return nil, errors.New("no") }
func (c *adapterConn) IsValid() bool                       { return c.valid }
func (c *adapterConn) Ping(context.Context) error          { return c.pingErr }
func (c *adapterConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.queried = q
	return &adapterRow{}, nil
}

type adapterRow struct{ done bool }

func (r *adapterRow) Columns() []string { return []string{"x"} }
func (r *adapterRow) Close() error      { return nil }
func (r *adapterRow) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

type adapterConnector struct{ conn *adapterConn }

func (c adapterConnector) Connect(context.Context) (driver.Conn, error) { return c.conn, nil }
func (c adapterConnector) Driver() driver.Driver                        { return nil }

func TestConnFactory(t *testing.T) {
	fc := &adapterConn{valid: true}
	f := connFactory{connector: adapterConnector{fc}}
	conn, err := f.create(context.Background())
	if err != nil || conn != fc {
		t.Fatalf("Create = %v, %v", conn, err)
	}
	if err := f.validate(conn); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	fc.valid = false
	if err := f.validate(conn); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("Validate(invalid) = %v, want driver.ErrBadConn", err)
	}
	fc.pingErr = errors.New("ping failed")
	if err := f.test(context.Background(), conn); err != fc.pingErr {
		t.Fatalf("Test = %v, want the ping's error", err)
	}
	f.testQuery = "SELECT 1"
	if err := f.test(context.Background(), conn); err != nil || fc.queried != "SELECT 1" {
		t.Fatalf("Test with query = %v, queried %q", err, fc.queried)
	}
	if err := f.destroy(conn); err != nil || !fc.closed {
		t.Fatalf("Destroy = %v, closed %v", err, fc.closed)
	}
}

// resetConn is a fakeConn whose ResetSession says whether it is alive.
type adapterResetConn struct {
	adapterConn
	resetErr error
	resetCtx context.Context
}

func (c *adapterResetConn) ResetSession(ctx context.Context) error {
	c.resetCtx = ctx
	return c.resetErr
}

func TestResetSessionCallsTheDriversResetter(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller")
	c := &adapterResetConn{resetErr: driver.ErrBadConn}
	if err := resetSession(ctx, c); !errors.Is(err, driver.ErrBadConn) || c.resetCtx.Value(key{}) != "caller" {
		t.Fatalf("resetSession = %v with ctx %v; want the resetter's error, called with the caller's context", err, c.resetCtx)
	}
	if err := resetSession(ctx, &adapterConn{}); err != nil {
		t.Fatalf("resetSession of a conn without a resetter = %v", err)
	}
}
