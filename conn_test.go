package respool

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/respool/respool/pool"
)

// This file tests conn, the connection database/sql holds, on go-sqlmock and
// on faultConnector (connector_test.go) for the faults sqlmock cannot make.

// openFaultDB returns a *sql.DB on a faultConnector over m.
func openFaultDB(t *testing.T, m *mockDB, legacy bool, pc pool.Config) (*sql.DB, *Connector, *faultConnector) {
	t.Helper()
	fc := &faultConnector{m: m, legacy: legacy}
	db, c := openDB(t, Config{Connector: fc, Pool: pc})
	return db, c, fc
}

// checkPool waits until c's pool has made creates connections, dropped
// dropped of them as broken and keeps total, all idle (see waitStats), and
// fails the test if it does not get there. A connection is dropped when a
// conn discards it (it failed with driver.ErrBadConn) or when the check of
// a connection taken from idle refuses it (Destroys.Rejected).
func checkPool(t *testing.T, c *Connector, creates, dropped uint64, total int) {
	t.Helper()
	droppedOf := func(s pool.Stats) uint64 {
		return s.Destroys.Discarded + s.Destroys.Rejected
	}
	s := waitStats(t, c, func(s pool.Stats) bool {
		return s.Creates == creates && droppedOf(s) == dropped && s.Total == total && s.Idle == total
	})
	if s.Creates != creates || droppedOf(s) != dropped || s.Total != total || s.Idle != total {
		t.Errorf("pool Creates %d, dropped (discarded or rejected) %d, Total %d, Idle %d; want %d, %d, %d, %d",
			s.Creates, droppedOf(s), s.Total, s.Idle, creates, dropped, total, total)
	}
}

func TestDriverErrorsPassThroughUnchanged(t *testing.T) {
	errBoom := errors.New("boom: the server said no")
	ctx := context.Background()
	tests := []struct {
		name   string
		expect func(m sqlmock.Sqlmock)
		run    func(db *sql.DB) error
	}{
		{"query",
			func(m sqlmock.Sqlmock) { m.ExpectQuery("SELECT 1").WillReturnError(errBoom) },
			func(db *sql.DB) error {
				rows, err := db.QueryContext(ctx, "SELECT 1")
				if err == nil {
					rows.Close()
				}
				return err
			}},
		{"exec",
			func(m sqlmock.Sqlmock) { m.ExpectExec("UPDATE t SET n = 1").WillReturnError(errBoom) },
			func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, "UPDATE t SET n = 1")
				return err
			}},
		{"begin",
			func(m sqlmock.Sqlmock) { m.ExpectBegin().WillReturnError(errBoom) },
			func(db *sql.DB) error {
				tx, err := db.BeginTx(ctx, nil)
				if err == nil {
					_ = tx.Rollback()
				}
				return err
			}},
		{"commit",
			func(m sqlmock.Sqlmock) { m.ExpectBegin(); m.ExpectCommit().WillReturnError(errBoom) },
			func(db *sql.DB) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return fmt.Errorf("begin: %w", err) // not errBoom itself: fails the test
				}
				return tx.Commit()
			}},
		{"rollback",
			func(m sqlmock.Sqlmock) { m.ExpectBegin(); m.ExpectRollback().WillReturnError(errBoom) },
			func(db *sql.DB) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return fmt.Errorf("begin: %w", err)
				}
				return tx.Rollback()
			}},
		{"prepare",
			func(m sqlmock.Sqlmock) { m.ExpectPrepare("SELECT 1").WillReturnError(errBoom) },
			func(db *sql.DB) error {
				stmt, err := db.PrepareContext(ctx, "SELECT 1")
				if err == nil {
					stmt.Close()
				}
				return err
			}},
		{"ping",
			func(m sqlmock.Sqlmock) { m.ExpectPing().WillReturnError(errBoom) },
			func(db *sql.DB) error { return db.PingContext(ctx) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMockWith(t, func(dsn string) (*sql.DB, sqlmock.Sqlmock, error) {
				return sqlmock.NewWithDSN(dsn,
					sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual), sqlmock.MonitorPingsOption(true))
			})
			tc.expect(m.mock)
			db, c := openMockDB(t, m, pool.Config{MaxObjects: 2})

			err := tc.run(db)
			if err != errBoom {
				t.Fatalf("error %T %v; want the driver's error value itself", err, err)
			}
			m.met(t)
			// Not driver.ErrBadConn: no retry, and the connection goes back
			// to the pool.
			if s := c.Stats(); s.Takes != 1 {
				t.Errorf("pool Takes %d; want 1 (database/sql retries only driver.ErrBadConn)", s.Takes)
			}
			checkPool(t, c, 1, 0, 1)
		})
	}
}

func TestBadConnIsDiscardedAndRetried(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// expect sets the mock's expectations for the attempt that
		// succeeds, on a new connection.
		expect func(m sqlmock.Sqlmock)
		run    func(db *sql.DB) error
		// retried is false for Ping: database/sql retries getting a
		// connection for it, not the ping.
		retried bool
	}{
		{"query", func(m sqlmock.Sqlmock) {
			m.ExpectQuery("SELECT 2").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))
		}, func(db *sql.DB) error {
			n, err := queryInt(ctx, db, "SELECT 2")
			if err == nil && n != 2 {
				err = fmt.Errorf("query = %d; want 2", n)
			}
			return err
		}, true},
		{"exec", func(m sqlmock.Sqlmock) {
			m.ExpectExec("UPDATE t SET n = 2").WillReturnResult(sqlmock.NewResult(0, 1))
		}, func(db *sql.DB) error {
			_, err := db.ExecContext(ctx, "UPDATE t SET n = 2")
			return err
		}, true},
		{"begin", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectCommit()
		}, func(db *sql.DB) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			return tx.Commit()
		}, true},
		{"prepare", func(m sqlmock.Sqlmock) {
			m.ExpectPrepare("SELECT 2")
		}, func(db *sql.DB) error {
			stmt, err := db.PrepareContext(ctx, "SELECT 2")
			if err != nil {
				return err
			}
			return stmt.Close()
		}, true},
		{"ping", func(sqlmock.Sqlmock) {}, func(db *sql.DB) error { return db.PingContext(ctx) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t)
			m.expectInt("SELECT 1", 1)
			tc.expect(m.mock)
			m.expectInt("SELECT 3", 3)
			db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 2})

			if _, err := queryInt(ctx, db, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			first := fc.conn(t, 1)
			first.dead.Store(true) // the server closed it while it was idle

			err := tc.run(db)
			switch {
			case tc.retried && err != nil:
				t.Fatalf("database/sql did not retry on a new connection: %v", err)
			case !tc.retried && !errors.Is(err, sqldriver.ErrBadConn):
				t.Fatalf("ping on a dead connection: %v; want driver.ErrBadConn", err)
			}
			if !tc.retried {
				// database/sql does not retry a ping: the next one gets a
				// new connection.
				if err := db.PingContext(ctx); err != nil {
					t.Fatalf("second ping: %v", err)
				}
			}
			checkPool(t, c, 2, 1, 1)
			if !first.closed.Load() {
				t.Error("the broken connection was not closed")
			}

			// The broken connection is never handed out again.
			mark := len(fc.servedBy())
			if n, err := queryInt(ctx, db, "SELECT 3"); err != nil || n != 3 {
				t.Fatalf("query after the retry = %d, %v", n, err)
			}
			if served := fc.servedBy(); slices.Contains(served[mark:], 1) {
				t.Errorf("connections serving each query %v: the broken connection 1 served again", served)
			}
			if fc.made() != 2 {
				t.Errorf("%d connections made; want 2", fc.made())
			}
			m.met(t)
		})
	}
}

func TestBadConnOnEveryAttempt(t *testing.T) {
	m := newMock(t)
	for range 3 { // database/sql tries twice, then once on a new connection
		m.mock.ExpectQuery("SELECT 1").WillReturnError(sqldriver.ErrBadConn)
	}
	db, c := openMockDB(t, m, pool.Config{MaxObjects: 1})

	_, err := queryInt(context.Background(), db, "SELECT 1")
	if !errors.Is(err, sqldriver.ErrBadConn) {
		t.Fatalf("error %v; want driver.ErrBadConn after database/sql's retries", err)
	}
	m.met(t)
	s := c.Stats()
	if s.Takes != 3 || s.Creates != 3 {
		t.Errorf("pool Takes %d, Creates %d; want 3, 3 (each attempt on a new connection)", s.Takes, s.Creates)
	}
	checkPool(t, c, 3, 3, 0)
}

// The real driver's ResetSession runs when a connection is taken again, not
// when it is given back: a session it refuses is discarded then, and the
// caller gets another connection.
func TestResetSessionFailureDiscardsOnReuse(t *testing.T) {
	for _, resetErr := range []error{errors.New("session cannot be reset"), sqldriver.ErrBadConn} {
		t.Run(resetErr.Error(), func(t *testing.T) {
			m := newMock(t)
			m.expectInt("SELECT 1", 1)
			m.expectInt("SELECT 2", 2)
			db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 1})
			ctx := context.Background()

			sc, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			first := fc.conn(t, 1)
			first.setResetErr(resetErr)
			if err := sc.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
				t.Fatalf("query: %v", err)
			}
			if err := sc.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if n := len(first.resetCalls()); n != 0 {
				t.Errorf("ResetSession called %d times by the first use and its give-back; want 0 (a new connection needs no reset)", n)
			}
			checkPool(t, c, 1, 0, 1) // given back as it is

			if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
				t.Fatalf("next query = %d, %v", n, err)
			}
			if n := len(first.resetCalls()); n != 1 {
				t.Errorf("ResetSession called %d times when the connection was taken again; want 1", n)
			}
			checkPool(t, c, 2, 1, 1)
			if !first.closed.Load() {
				t.Error("a connection whose session cannot be reset was not closed")
			}
			if got, want := fc.servedBy(), []int{1, 2}; !slices.Equal(got, want) {
				t.Errorf("connections serving each query %v; want %v", got, want)
			}
			m.met(t)
		})
	}
}

type ctxKey struct{}

// ResetSession gets the caller's context: its values and its deadline; a
// context that cannot end is bounded by TestTimeout, its values kept. Both ways a shell is given a connection are
// checked: database/sql reusing an idle shell (conn.ResetSession) and
// database/sql asking for a new one (Connector.Connect).
func TestResetSessionGetsTheCallersContext(t *testing.T) {
	for _, path := range []string{"idle shell", "Connect"} {
		t.Run(path, func(t *testing.T) {
			m := newMock(t)
			m.expectInt("SELECT 1", 1)
			m.expectInt("SELECT 2", 2)
			m.expectInt("SELECT 3", 3)
			const testTimeout = time.Hour
			db, _, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 1, TestTimeout: testTimeout})
			if path == "Connect" {
				db.SetMaxIdleConns(-1) // database/sql keeps no shell: every use calls Connect
			}
			if _, err := queryInt(context.Background(), db, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			first := fc.conn(t, 1)

			ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "caller"), time.Minute)
			defer cancel()
			want, _ := ctx.Deadline()
			if _, err := queryInt(ctx, db, "SELECT 2"); err != nil {
				t.Fatal(err)
			}
			if _, err := queryInt(context.WithValue(context.Background(), ctxKey{}, "no deadline"), db, "SELECT 3"); err != nil {
				t.Fatal(err)
			}
			calls := first.resetCalls()
			if len(calls) != 2 {
				t.Fatalf("ResetSession called %d times; want 2 (once per reuse)", len(calls))
			}
			if v := calls[0].Value(ctxKey{}); v != "caller" {
				t.Errorf("ResetSession's context has value %v; want the caller's", v)
			}
			if d, ok := calls[0].Deadline(); !ok || !d.Equal(want) {
				t.Errorf("ResetSession's deadline %v (%v); want the caller's, %v", d, ok, want)
			}
			if d, ok := calls[1].Deadline(); !ok || time.Until(d) > testTimeout {
				t.Errorf("ResetSession's deadline without the caller's: %v (%v); want at most TestTimeout from now", d, ok)
			}
			if v := calls[1].Value(ctxKey{}); v != "no deadline" {
				t.Errorf("ResetSession's context without a deadline has value %v; want the caller's", v)
			}
			if fc.made() != 1 {
				t.Errorf("%d connections made; want 1", fc.made())
			}
			m.met(t)
		})
	}
}

// A ResetSession that hangs (a ping on a network that stopped) is cut at
// TestTimeout for a caller without a deadline; the connection is discarded
// and the caller served by a new one. Giving a connection back never waits.
func TestHangingResetSessionIsBoundedAndDiscarded(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.expectInt("SELECT 2", 2)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 1, TestTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	fc.conn(t, 1).setResetHangs()
	if err := sc.Close(); err != nil { // would hang if the give-back reset the session
		t.Fatal(err)
	}
	if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
		t.Fatalf("query after a hanging reset = %d, %v", n, err)
	}
	if got, want := fc.servedBy(), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("connections serving each query %v; want %v", got, want)
	}
	checkPool(t, c, 2, 1, 1)
	m.met(t)
}

// After the server ended every idle session, the next use finds each dead
// connection as it is taken and discards it: no query fails.
func TestDeadIdleConnectionsAreDiscardedWhenTaken(t *testing.T) {
	m := newMock(t)
	const n = 3
	for i := range n {
		m.expectInt("SELECT n", i)
	}
	m.expectInt("SELECT 9", 9)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: n})
	ctx := context.Background()
	var held []*sql.Conn
	for i := range n {
		sc, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := queryIntOn(ctx, sc, "SELECT n"); err != nil || got != i {
			t.Fatalf("query %d = %d, %v", i, got, err)
		}
		held = append(held, sc)
	}
	for _, sc := range held {
		if err := sc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for id := 1; id <= n; id++ {
		fc.conn(t, id).setResetErr(sqldriver.ErrBadConn) // ended by the server
	}
	if got, err := queryInt(ctx, db, "SELECT 9"); err != nil || got != 9 {
		t.Fatalf("query after the server ended the idle sessions = %d, %v", got, err)
	}
	if served := fc.servedBy(); served[len(served)-1] != n+1 {
		t.Errorf("connections serving each query %v; want the last on a new connection %d", served, n+1)
	}
	checkPool(t, c, n+1, n, 1)
	m.met(t)
}

// A connection the pool made on its own (MinIdle) and that idled is checked
// when it is first taken, as every connection taken from idle is: one the
// server ended while it idled never serves a query.
func TestNeverUsedIdleConnectionIsCheckedWhenTaken(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 2, MinIdle: 1})
	ctx := context.Background()
	waitStats(t, c, func(s pool.Stats) bool { return s.Idle == 1 })
	first := fc.conn(t, 1)
	first.setResetErr(sqldriver.ErrBadConn) // ended by the server while it idled
	first.dead.Store(true)
	if n, err := queryInt(ctx, db, "SELECT 1"); err != nil || n != 1 {
		t.Fatalf("query = %d, %v", n, err)
	}
	if served := fc.servedBy(); slices.Contains(served, 1) {
		t.Errorf("connections serving each query %v: the dead idle connection 1 served", served)
	}
	if n := len(first.resetCalls()); n != 1 {
		t.Errorf("ResetSession called %d times on the idle connection; want 1", n)
	}
	// MinIdle may have the pool make another connection meanwhile.
	waitStats(t, c, func(s pool.Stats) bool { return s.Destroys.Rejected == 1 })
	if !first.closed.Load() {
		t.Error("the dead connection was not closed")
	}
	m.met(t)
}

func queryIntOn(ctx context.Context, sc *sql.Conn, query string) (int, error) {
	var n int
	err := sc.QueryRowContext(ctx, query).Scan(&n)
	return n, err
}

func TestInvalidConnDestroyedOnGiveBack(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.expectInt("SELECT 2", 2)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 1})
	ctx := context.Background()

	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	first := fc.conn(t, 1)
	first.valid.Store(false) // the driver noticed it is broken
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	s := waitStats(t, c, func(s pool.Stats) bool { return s.Destroys.Invalid == 1 && s.Total == 0 })
	if s.Destroys.Invalid != 1 || s.Total != 0 {
		t.Errorf("pool Destroys.Invalid %d, Total %d; want 1, 0", s.Destroys.Invalid, s.Total)
	}
	if !first.closed.Load() {
		t.Error("the invalid connection was not closed")
	}
	checkPool(t, c, 1, 0, 0) // destroyed as invalid, not discarded

	if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
		t.Fatalf("next query = %d, %v", n, err)
	}
	if got, want := fc.servedBy(), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("connections serving each query %v; want %v", got, want)
	}
	m.met(t)
}

func TestInvalidIdleConnDestroyedOnTake(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.expectInt("SELECT 2", 2)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 1})
	ctx := context.Background()

	if _, err := queryInt(ctx, db, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	fc.conn(t, 1).valid.Store(false) // broke while idle
	if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
		t.Fatalf("query after the idle connection broke = %d, %v", n, err)
	}
	if got, want := fc.servedBy(), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("connections serving each query %v; want %v", got, want)
	}
	s := waitStats(t, c, func(s pool.Stats) bool { return s.Destroys.Invalid == 1 })
	if s.Destroys.Invalid != 1 {
		t.Errorf("Destroys.Invalid %d; want 1", s.Destroys.Invalid)
	}
	checkPool(t, c, 2, 0, 1)
	m.met(t)
}

func TestBadConnFromTxIsDiscarded(t *testing.T) {
	// An ErrBadConn from the driver.Tx the conn handed out makes database/sql
	// close the conn: respool must discard the connection, not reuse it.
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			m := newMock(t)
			m.mock.ExpectBegin()
			m.expectInt("SELECT 2", 2)
			db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 1})
			ctx := context.Background()

			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			first := fc.conn(t, 1)
			first.dead.Store(true) // the server went away during the transaction
			if end == "commit" {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if !errors.Is(err, sqldriver.ErrBadConn) {
				t.Fatalf("%s on a dead connection: %v; want driver.ErrBadConn", end, err)
			}
			checkPool(t, c, 1, 1, 0)

			if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
				t.Fatalf("next query = %d, %v", n, err)
			}
			if served := fc.servedBy(); slices.Contains(served, 1) {
				t.Errorf("connections serving each query %v: the broken connection 1 was handed out again", served)
			}
			m.met(t)
		})
	}
}

// point is a value the default converter refuses; pointConverter, the
// "driver's" converter, writes it as text.
type point struct{ X, Y int }

type pointConverter struct{}

func (pointConverter) ConvertValue(v any) (sqldriver.Value, error) {
	if p, ok := v.(point); ok {
		return fmt.Sprintf("(%d,%d)", p.X, p.Y), nil
	}
	return sqldriver.DefaultParameterConverter.ConvertValue(v)
}

func TestCheckNamedValuePassesThrough(t *testing.T) {
	m := newMockWith(t, func(dsn string) (*sql.DB, sqlmock.Sqlmock, error) {
		return sqlmock.NewWithDSN(dsn,
			sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual), sqlmock.ValueConverterOption(pointConverter{}))
	})
	m.mock.ExpectExec("INSERT INTO p VALUES (?)").WithArgs("(1,2)").WillReturnResult(sqlmock.NewResult(1, 1))
	db, _ := openMockDB(t, m, pool.Config{})

	// Without the driver's CheckNamedValue, database/sql's default
	// converter would refuse a struct.
	if _, err := db.ExecContext(context.Background(), "INSERT INTO p VALUES (?)", point{1, 2}); err != nil {
		t.Fatalf("exec with a value only the driver converts: %v", err)
	}
	m.met(t)
}

func TestCheckNamedValueWithoutChecker(t *testing.T) {
	m := newMock(t)
	db, _, _ := openFaultDB(t, m, true, pool.Config{})
	_, err := db.ExecContext(context.Background(), "INSERT INTO p VALUES (?)", point{1, 2})
	if err == nil || !strings.Contains(err.Error(), "converting argument") {
		t.Fatalf("exec with a struct on a driver without a checker: %v; want database/sql's conversion error", err)
	}

	// At the conn: ErrSkip sends database/sql to its default converter.
	c := &conn{inner: legacyConn{}}
	if err := c.CheckNamedValue(&sqldriver.NamedValue{Ordinal: 1, Value: point{}}); err != sqldriver.ErrSkip {
		t.Errorf("CheckNamedValue without an inner checker = %v; want driver.ErrSkip", err)
	}
}

func TestBeginTxOptionsPassThrough(t *testing.T) {
	m := newMock(t)
	m.mock.ExpectBegin()
	m.mock.ExpectCommit()
	db, c, fc := openFaultDB(t, m, false, pool.Config{})

	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	opts, begun := fc.conn(t, 1).lastTx()
	want := sqldriver.TxOptions{Isolation: sqldriver.IsolationLevel(sql.LevelSerializable), ReadOnly: true}
	if begun != 1 || opts != want {
		t.Errorf("the driver's BeginTx got %+v (%d calls); want %+v once", opts, begun, want)
	}
	m.met(t)
	checkPool(t, c, 1, 0, 1)
}

func TestBeginTxOnLegacyConn(t *testing.T) {
	m := newMock(t)
	m.mock.ExpectBegin()
	m.mock.ExpectCommit()
	db, c, _ := openFaultDB(t, m, true, pool.Config{})
	ctx := context.Background()

	for _, opts := range []*sql.TxOptions{
		{Isolation: sql.LevelSerializable},
		{ReadOnly: true},
	} {
		tx, err := db.BeginTx(ctx, opts)
		if err == nil {
			_ = tx.Rollback()
			t.Fatalf("BeginTx(%+v) on a driver with only Begin succeeded", opts)
		}
		if errors.Is(err, sqldriver.ErrBadConn) {
			t.Errorf("BeginTx(%+v) = %v: not a broken connection", opts, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "respool: ") || !strings.Contains(msg, "isolation") ||
			!strings.Contains(msg, "read-only") {
			t.Errorf("BeginTx(%+v) = %q; want respool's error naming isolation levels and read-only", opts, msg)
		}
	}

	// The default options need nothing beyond Begin.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("BeginTx with default options: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	m.met(t)
	checkPool(t, c, 1, 0, 1) // the refused BeginTx did not cost the connection
}

func TestConnCloseTwiceGivesBackOnce(t *testing.T) {
	m := newMock(t)
	fc := &faultConnector{m: m}
	c := newTestConnector(t, Config{Connector: fc, Pool: pool.Config{MaxObjects: 1}})

	dc, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := dc.(interface{ Unwrap() sqldriver.Conn }); !ok || u.Unwrap() != fc.conn(t, 1) {
		t.Errorf("Unwrap does not return the real driver's connection")
	}
	// database/sql calls IsValid as it puts a conn in its idle list: the
	// connection goes back to the pool, and the conn keeps only its shell.
	if v, ok := dc.(sqldriver.Validator); !ok || !v.IsValid() {
		t.Error("IsValid of a healthy conn is false: database/sql would drop the shell")
	}
	if u := dc.(interface{ Unwrap() sqldriver.Conn }); u.Unwrap() != nil {
		t.Error("the conn still holds its connection after IsValid")
	}
	if s := c.Stats(); s.Idle != 1 || s.InUse != 0 {
		t.Errorf("after IsValid the pool has %d idle, %d in use; want the connection back: 1, 0", s.Idle, s.InUse)
	}
	for range 2 {
		if err := dc.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	s := c.Stats()
	if s.Takes != 1 || s.Idle != 1 || s.Total != 1 {
		t.Errorf("pool Takes %d, Idle %d, Total %d; want 1, 1, 1", s.Takes, s.Idle, s.Total)
	}
	if fc.conn(t, 1).closed.Load() {
		t.Error("Close closed the physical connection; want it given back")
	}
}

// A statement prepared through *sql.DB is prepared once on its connection
// and kept there across the connection's trips back to the pool; closing the
// *sql.Stmt closes it there.
func TestStatementIsPreparedOncePerConnection(t *testing.T) {
	m := newMock(t)
	ep := m.mock.ExpectPrepare("SELECT n").WillBeClosed()
	ep.ExpectQuery().WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	ep.ExpectQuery().WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))
	db, c := openMockDB(t, m, pool.Config{MaxObjects: 1})
	ctx := context.Background()
	stmt, err := db.PrepareContext(ctx, "SELECT n")
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 2; want++ {
		var n int
		if err := stmt.QueryRowContext(ctx).Scan(&n); err != nil || n != want {
			t.Fatalf("use %d: %d, %v", want, n, err)
		}
	}
	if err := stmt.Close(); err != nil {
		t.Fatal(err)
	}
	m.mock.ExpectPing()
	if err := db.PingContext(ctx); err != nil { // takes the connection: the statement is closed
		t.Fatal(err)
	}
	m.met(t)
	if s := c.Stats(); s.Creates != 1 || s.InUse != 0 {
		t.Fatalf("pool: %+v; want one connection, back in the pool", s)
	}
}

// A statement is prepared on each connection it is used on, once; closing
// its *sql.Stmt closes it on the connection in hand at once, on the others
// when they are next taken, and on idle ones when the pool tests them.
func TestStatementsOnSeveralConnections(t *testing.T) {
	m := newMock(t)
	db, c, fc := openFaultDB(t, m, false, pool.Config{MaxObjects: 2})
	ctx := context.Background()
	m.mock.ExpectPrepare("SELECT n").WillBeClosed() // on connection 1, by db.PrepareContext
	stmt, err := db.PrepareContext(ctx, "SELECT n")
	if err != nil {
		t.Fatal(err)
	}
	held, err := db.Conn(ctx) // connection 1, so that the next use makes connection 2
	if err != nil {
		t.Fatal(err)
	}
	ep := m.mock.ExpectPrepare("SELECT n").WillBeClosed() // on connection 2
	ep.ExpectQuery().WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	ep.ExpectQuery().WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))
	for want := 1; want <= 2; want++ {
		var n int
		if err := stmt.QueryRowContext(ctx).Scan(&n); err != nil || n != want {
			t.Fatalf("use %d: %d, %v", want, n, err)
		}
	}
	if fc.made() != 2 {
		t.Fatalf("%d connections made; want 2", fc.made())
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Close(); err != nil {
		t.Fatal(err)
	}
	// Both connections idle: a test of each, as the pool's tick runs it,
	// closes the statement there.
	f := physFactory{real: connFactory{connector: fc}, stmts: &c.stmts}
	var hs []pool.Handle[sqldriver.Conn]
	for range 2 {
		h, err := c.pool.TryTake()
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		if err := f.Test(ctx, h.Value()); err != nil {
			t.Fatal(err)
		}
	}
	m.met(t)
	for _, h := range hs {
		if err := h.GiveBack(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStatementCacheIsBounded(t *testing.T) {
	var sc stmtCache
	var prepared, closed []string
	prepare := func(_ context.Context, q string) (sqldriver.Stmt, error) {
		prepared = append(prepared, q)
		return &recordingStmt{query: q, closed: &closed}, nil
	}
	ctx := context.Background()
	for i := range stmtCacheSize {
		if _, err := sc.get(ctx, fmt.Sprint(i), prepare); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sc.get(ctx, "0", prepare); err != nil { // 0 is now the most recently used
		t.Fatal(err)
	}
	if _, err := sc.get(ctx, "new", prepare); err != nil {
		t.Fatal(err)
	}
	if len(prepared) != stmtCacheSize+1 || len(sc.byQuery) != stmtCacheSize {
		t.Errorf("%d prepared, %d cached; want %d, %d", len(prepared), len(sc.byQuery), stmtCacheSize+1, stmtCacheSize)
	}
	if want := []string{"1"}; !slices.Equal(closed, want) {
		t.Errorf("closed %v; want %v, the least recently used", closed, want)
	}
}

type recordingStmt struct {
	query  string
	closed *[]string
}

func (s *recordingStmt) Close() error {
	*s.closed = append(*s.closed, s.query)
	return nil
}
func (s *recordingStmt) NumInput() int { return 0 }
func (s *recordingStmt) Exec([]sqldriver.Value) (sqldriver.Result, error) {
	return nil, errors.New("not used")
}
func (s *recordingStmt) Query([]sqldriver.Value) (sqldriver.Rows, error) {
	return nil, errors.New("not used")
}
