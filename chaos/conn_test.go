package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// flavoredConnector returns a Connector over the fake driver that imitates
// the errors of drv's driver (pgx's or mysql's).
func flavoredConnector(t *testing.T, drv driver.Driver, faults ...Fault) (*Connector, string) {
	t.Helper()
	dsn := fakeDSN(t)
	c, err := NewConnector(Config{Connector: flavored{dsn: dsn, drv: drv}, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, dsn
}

var flavors = []struct {
	name string
	drv  driver.Driver
	lost error
}{
	{"pgx", stdlib.GetDefaultDriver(), io.ErrUnexpectedEOF},
	{"mysql", &mysql.MySQLDriver{}, mysql.ErrInvalidConn},
}

func TestDropBeforeSending(t *testing.T) {
	c, dsn := newFake(t, Config{Faults: []Fault{{Kind: KindDrop, Every: 2}}})
	cn := connect(t, c)
	ctx := ctxT(t)
	if err := exec(ctx, cn); err != nil {
		t.Fatal(err)
	}
	if err := exec(ctx, cn); err != driver.ErrBadConn {
		t.Fatalf("err = %v, want driver.ErrBadConn itself", err)
	}
	if cn.IsValid() || fakeOpen(dsn) != 0 {
		t.Fatalf("after the drop: valid %v, %d real connections open; want invalid, closed", cn.IsValid(), fakeOpen(dsn))
	}
	if err := cn.ResetSession(ctx); err != driver.ErrBadConn {
		t.Errorf("ResetSession = %v, want driver.ErrBadConn", err)
	}
	if err := exec(ctx, cn); err != driver.ErrBadConn {
		t.Errorf("the next call: %v, want driver.ErrBadConn", err)
	}
	if got := fakeCalls(dsn); len(got) != 1 {
		t.Errorf("the driver saw %q, want the first exec only", got)
	}
}

// TestDropBeforeSendingRetried: database/sql retries a call that failed with
// driver.ErrBadConn on another connection; the caller sees nothing.
func TestDropBeforeSendingRetried(t *testing.T) {
	db, c, dsn := fakeDB(t, Config{Faults: []Fault{{Kind: KindDrop, Every: 2}}})
	execN(t, db, 2)
	if n := c.Stats().Faults["drop"].Injected; n != 1 {
		t.Errorf("%d drops, want 1", n)
	}
	if got := fakeCalls(dsn); len(got) != 2 {
		t.Errorf("the driver saw %q, want two execs", got)
	}
}

// TestDropAfterSending: the call runs, then the connection is lost with the
// driver's own error, and its results are released.
func TestDropAfterSending(t *testing.T) {
	for _, fl := range flavors {
		t.Run(fl.name, func(t *testing.T) {
			c, dsn := flavoredConnector(t, fl.drv, Fault{Kind: KindDrop, AfterSend: true, On: OpExec | OpQuery | OpCommit})
			ctx := ctxT(t)
			cn := connect(t, c)
			if err := exec(ctx, cn); err != fl.lost {
				t.Fatalf("Exec: %v, want %v itself", err, fl.lost)
			}
			if cn.IsValid() || fakeOpen(dsn) != 0 {
				t.Fatal("the connection is still open")
			}
			cn = connect(t, c)
			if err := query(ctx, cn); err != fl.lost {
				t.Fatalf("Query: %v; want %v", err, fl.lost)
			}
			cn = connect(t, c)
			tx, err := cn.BeginTx(ctx, driver.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != fl.lost {
				t.Fatalf("Commit: %v, want %v", err, fl.lost)
			}
			want := []string{"exec UPDATE t", "query SELECT 1", "begin", "commit"}
			if got := fakeCalls(dsn); !slices.Equal(got, want) {
				t.Errorf("the driver saw %q, want %q: every call ran", got, want)
			}
		})
	}
}

// TestFreeze: the call blocks until its context ends, then the connection
// is closed and the context's error returned.
func TestFreeze(t *testing.T) {
	frozen := make(chan struct{}, 1)
	c, dsn := newFake(t, Config{Faults: []Fault{{Kind: KindFreeze, On: OpQuery}},
		OnFault: func(Event) { frozen <- struct{}{} }})
	cn := connect(t, c)
	ctx, cancel := context.WithCancel(ctxT(t))
	done := async(func() error { return query(ctx, cn) })
	<-frozen
	select {
	case err := <-done:
		t.Fatalf("a frozen call returned %v before its context ended", err)
	default:
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if cn.IsValid() || fakeOpen(dsn) != 0 || len(fakeCalls(dsn)) != 0 {
		t.Errorf("after the freeze: valid %v, open %d, calls %q", cn.IsValid(), fakeOpen(dsn), fakeCalls(dsn))
	}
}

// TestFreezeEndsWithClose: a frozen call whose context cannot end returns
// when the Connector is closed.
func TestFreezeEndsWithClose(t *testing.T) {
	for _, fl := range flavors {
		t.Run(fl.name, func(t *testing.T) {
			frozen := make(chan struct{}, 1)
			c, err := NewConnector(Config{Connector: flavored{dsn: fakeDSN(t), drv: fl.drv},
				Faults: []Fault{{Kind: KindFreeze}}, OnFault: func(Event) { frozen <- struct{}{} }})
			if err != nil {
				t.Fatal(err)
			}
			cn := connect(t, c)
			done := async(func() error { return exec(context.Background(), cn) })
			<-frozen
			c.Close()
			if err := <-done; err != fl.lost {
				t.Fatalf("err = %v, want %v", err, fl.lost)
			}
			if _, err := c.Connect(ctxT(t)); err != ErrClosed {
				t.Errorf("Connect after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// TestServerErrors: an error is a copy of the Fault's, the call does not
// reach the driver, and an error after which a server ends the session
// closes the connection.
func TestServerErrors(t *testing.T) {
	for _, tc := range []struct {
		err   error
		fatal bool
	}{
		{PgError("40001"), false}, {PgError("57P01"), true}, {PgError("08006"), true}, {PgError("23505"), false},
		{MySQLError(1213), false}, {MySQLError(1927), true}, {MySQLError(1053), true}, {MySQLError(1064), false},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			c, dsn := newFake(t, Config{Faults: []Fault{{Kind: KindError, Err: tc.err}}})
			cn := connect(t, c)
			ctx := ctxT(t)
			err1, err2 := exec(ctx, cn), exec(ctx, cn)
			switch {
			case tc.fatal && (err1.Error() != tc.err.Error() || err2 != driver.ErrBadConn || cn.IsValid()):
				t.Fatalf("got %v, then %v; valid %v: want the error, then a closed connection", err1, err2, cn.IsValid())
			case !tc.fatal && (err1.Error() != tc.err.Error() || err2.Error() != tc.err.Error() || !cn.IsValid()):
				t.Fatalf("got %v, then %v; valid %v: want the error twice, the connection kept", err1, err2, cn.IsValid())
			case err1 == tc.err || err1 == err2:
				t.Fatal("the same error value was returned twice: want copies")
			case len(fakeCalls(dsn)) != 0:
				t.Fatalf("the driver saw %q", fakeCalls(dsn))
			}
		})
	}
	var pgErr *pgconn.PgError
	if !errors.As(PgError("40001"), &pgErr) || pgErr.Detail != InjectedDetail || pgErr.Severity != "ERROR" {
		t.Errorf("PgError(40001) = %+v", pgErr)
	}
}

// TestOps: a Fault applies to the calls of its On set, through database/sql.
func TestOps(t *testing.T) {
	for _, tc := range []struct {
		on   Op
		run  func(context.Context, *sql.DB) error
		want []string // what reached the driver
	}{
		{OpPrepare, func(ctx context.Context, db *sql.DB) error {
			_, err := db.PrepareContext(ctx, "SELECT 1")
			return err
		}, nil},
		{OpBegin, func(ctx context.Context, db *sql.DB) error {
			_, err := db.BeginTx(ctx, nil)
			return err
		}, nil},
		{OpCommit, func(ctx context.Context, db *sql.DB) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			_, _ = tx.ExecContext(ctx, "UPDATE t")
			return tx.Commit()
		}, []string{"begin", "exec UPDATE t"}},
		{OpRollback, func(ctx context.Context, db *sql.DB) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			return tx.Rollback()
		}, []string{"begin"}},
		{OpPing, func(ctx context.Context, db *sql.DB) error { return db.PingContext(ctx) }, nil},
		{OpExec, func(ctx context.Context, db *sql.DB) error {
			st, err := db.PrepareContext(ctx, "UPDATE t")
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx)
			return err
		}, []string{"prepare UPDATE t"}},
		{OpQuery, func(ctx context.Context, db *sql.DB) error {
			var n int
			return db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
		}, nil},
	} {
		t.Run(tc.on.String(), func(t *testing.T) {
			db, c, dsn := fakeDB(t, Config{Faults: []Fault{{Kind: KindError, Err: MySQLError(1205), On: tc.on}}})
			var myErr *mysql.MySQLError
			if err := tc.run(ctxT(t), db); !errors.As(err, &myErr) || myErr.Number != 1205 {
				t.Fatalf("err = %v, want 1205", err)
			}
			if got := fakeCalls(dsn); !slices.Equal(got, tc.want) {
				t.Errorf("the driver saw %q, want %q", got, tc.want)
			}
			if c.Stats().Faults["error"].Injected != 1 {
				t.Errorf("Stats: %+v", c.Stats())
			}
		})
	}
}

// TestReset: a Fault on OpReset meets database/sql's check of a connection
// it reuses; a drop there makes it take another connection.
func TestReset(t *testing.T) {
	db, c, dsn := fakeDB(t, Config{Faults: []Fault{{Kind: KindDrop, On: OpReset}}})
	execN(t, db, 3)
	if n := c.Stats().Faults["drop"].Injected; n != 2 {
		t.Errorf("%d drops at reset, want 2 (every reuse)", n)
	}
	if open := fakeOpen(dsn); open != 1 {
		t.Errorf("%d connections open, want 1", open)
	}
}

func TestUnwrap(t *testing.T) {
	c, _ := newFake(t, Config{})
	cn := connect(t, c)
	u, ok := any(cn).(interface{ Unwrap() driver.Conn })
	if !ok {
		t.Fatalf("%T has no method Unwrap() driver.Conn", cn)
	}
	if _, ok := u.Unwrap().(*fakeConn); !ok {
		t.Errorf("Unwrap = %T, want *fakeConn", u.Unwrap())
	}
}

// TestSkippedCallMeetsFaultsOnce: a call the driver skips (driver.ErrSkip)
// is run by database/sql as a prepared statement, which meets the Faults
// the call met, once.
func TestSkippedCallMeetsFaultsOnce(t *testing.T) {
	db, c, dsn := fakeDB(t, Config{Faults: []Fault{
		{Kind: KindLatency, Latency: time.Millisecond},
		{Kind: KindDrop, AfterSend: true, Every: 2},
	}})
	ctx := ctxT(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "UPDATE t SET n = ?", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "UPDATE t SET n = ?", 2); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want the lost connection", err)
	}
	want := []string{"prepare UPDATE t SET n = ?", "stmt exec UPDATE t SET n = ?", "prepare UPDATE t SET n = ?", "stmt exec UPDATE t SET n = ?"}
	if got := fakeCalls(dsn); !slices.Equal(got, want) {
		t.Errorf("the driver saw %q, want %q", got, want)
	}
	s := c.Stats()
	if s.Faults["latency"].Injected != 2 || s.Faults["latency"].Latency != 2*time.Millisecond || s.Faults["drop"].Considered != 2 || s.Faults["drop"].Injected != 1 {
		t.Errorf("Stats %+v: want two calls, each delayed once, the second dropped", s)
	}
}

// legacyConn is a connection of a driver with the interfaces of Go 1.0:
// Execer but neither ExecerContext nor Queryer, nor ConnBeginTx.
type legacyConn struct{ fc *fakeConn }

func (c legacyConn) Prepare(q string) (driver.Stmt, error) { return c.fc.Prepare(q) }
func (c legacyConn) Close() error                          { return c.fc.Close() }
func (c legacyConn) Begin() (driver.Tx, error)             { return c.fc.Begin() }
func (c legacyConn) Exec(q string, args []driver.Value) (driver.Result, error) {
	if err := c.fc.record("legacy exec " + q); err != nil {
		return nil, err
	}
	return driver.RowsAffected(len(args)), nil
}

type legacyConnector struct{ dsn string }

func (c legacyConnector) Connect(context.Context) (driver.Conn, error) {
	fc, err := fakeDriver{}.Open(c.dsn)
	return legacyConn{fc.(*fakeConn)}, err
}
func (c legacyConnector) Driver() driver.Driver { return fakeDriver{} }

// TestLegacyDriver: a driver's old interfaces are used as database/sql
// uses them, and meet the Faults.
func TestLegacyDriver(t *testing.T) {
	dsn := fakeDSN(t)
	c, err := NewConnector(Config{Connector: legacyConnector{dsn}, Faults: []Fault{{Kind: KindDrop, Every: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := ctxT(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "UPDATE t SET n = ?", 1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "UPDATE t", sql.Named("n", 1)); err == nil {
		t.Fatal("a named argument reached an old driver")
	}
	if _, err := conn.ExecContext(ctx, "UPDATE t"); err != driver.ErrBadConn {
		t.Fatalf("the fourth call: %v, want the drop", err)
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err == nil {
		tx.Rollback()
		t.Fatal("a read-only transaction began on a driver without ConnBeginTx")
	}
	want := []string{"legacy exec UPDATE t SET n = ?", "prepare SELECT 1", "stmt query SELECT 1"}
	if got := fakeCalls(dsn); !slices.Equal(got, want) {
		t.Errorf("the driver saw %q, want %q", got, want)
	}
}
