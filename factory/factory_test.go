package factory

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFuncsDefaults(t *testing.T) {
	var f Funcs[int]
	if _, err := f.Create(context.Background()); !errors.Is(err, ErrNoCreate) {
		t.Fatalf("Create without CreateFunc = %v", err)
	}
	if f.Validate(1) != nil || f.Test(context.Background(), 1) != nil || f.Destroy(1) != nil {
		t.Fatal("nil hooks must accept and do nothing")
	}
	boom := errors.New("boom")
	f = Funcs[int]{
		CreateFunc:   func(context.Context) (int, error) { return 7, nil },
		ValidateFunc: func(int) error { return boom },
		TestFunc:     func(context.Context, int) error { return boom },
		DestroyFunc:  func(int) error { return boom },
	}
	if v, err := f.Create(context.Background()); v != 7 || err != nil {
		t.Fatalf("Create = %v, %v", v, err)
	}
	if f.Validate(1) != boom || f.Test(context.Background(), 1) != boom || f.Destroy(1) != boom {
		t.Fatal("hooks not called")
	}
}

// fakeConn is a driver.Conn with the optional interfaces the adapter uses.
type fakeConn struct {
	valid   bool
	pingErr error
	queried string
	closed  bool
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no") }
func (c *fakeConn) Close() error                        { c.closed = true; return nil }
func (c *fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("no") }
func (c *fakeConn) IsValid() bool                       { return c.valid }
func (c *fakeConn) Ping(context.Context) error          { return c.pingErr }
func (c *fakeConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.queried = q
	return &oneRow{}, nil
}

type oneRow struct{ done bool }

func (r *oneRow) Columns() []string { return []string{"x"} }
func (r *oneRow) Close() error      { return nil }
func (r *oneRow) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

type fakeConnector struct{ conn *fakeConn }

func (c fakeConnector) Connect(context.Context) (driver.Conn, error) { return c.conn, nil }
func (c fakeConnector) Driver() driver.Driver                        { return nil }

func TestConnectorAdapter(t *testing.T) {
	fc := &fakeConn{valid: true}
	f := Connector{Connector: fakeConnector{fc}}
	conn, err := f.Create(context.Background())
	if err != nil || conn != fc {
		t.Fatalf("Create = %v, %v", conn, err)
	}
	if err := f.Validate(conn); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	fc.valid = false
	if err := f.Validate(conn); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("Validate(invalid) = %v, want driver.ErrBadConn", err)
	}
	fc.pingErr = errors.New("ping failed")
	if err := f.Test(context.Background(), conn); err != fc.pingErr {
		t.Fatalf("Test = %v, want the ping's error", err)
	}
	f.TestQuery = "SELECT 1"
	if err := f.Test(context.Background(), conn); err != nil || fc.queried != "SELECT 1" {
		t.Fatalf("Test with query = %v, queried %q", err, fc.queried)
	}
	if err := f.Destroy(conn); err != nil || !fc.closed {
		t.Fatalf("Destroy = %v, closed %v", err, fc.closed)
	}
	if _, err := (Connector{}).Create(context.Background()); !errors.Is(err, ErrNoConnector) {
		t.Fatalf("Create without a connector = %v", err)
	}
}

// resetConn is a fakeConn whose ResetSession says whether it is alive.
type resetConn struct {
	fakeConn
	resetErr error
	resetCtx context.Context
}

func (c *resetConn) ResetSession(ctx context.Context) error { c.resetCtx = ctx; return c.resetErr }

func TestResetSessionHookCallsTheDriversResetter(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller")
	c := &resetConn{resetErr: driver.ErrBadConn}
	if err := ResetSession(ctx, c); !errors.Is(err, driver.ErrBadConn) || c.resetCtx.Value(key{}) != "caller" {
		t.Fatalf("ResetSession = %v with ctx %v; want the resetter's error, called with the caller's context", err, c.resetCtx)
	}
	if err := ResetSession(ctx, &fakeConn{}); err != nil {
		t.Fatalf("ResetSession of a conn without a resetter = %v", err)
	}
	f := Connector{Hooks: Hooks[driver.Conn]{BeforeHandOut: ResetSession}}
	var hp HookProvider[driver.Conn] = f
	if hp.LifecycleHooks().BeforeHandOut == nil {
		t.Fatal("Connector does not provide its hooks")
	}
}
