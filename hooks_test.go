package respool

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/respool/respool/pool"
)

// This file tests InitSQL and the hooks of Config on faultConnector.

// hookCalls records the connections and contexts a hook was called with.
type hookCalls struct {
	mu    sync.Mutex
	conns []int // faultConn ids
	ctxs  []context.Context
}

func (h *hookCalls) record(ctx context.Context, conn sqldriver.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conns = append(h.conns, conn.(*faultConn).id)
	h.ctxs = append(h.ctxs, ctx)
}

func (h *hookCalls) got() ([]int, []context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.conns), slices.Clone(h.ctxs)
}

// InitSQL runs on every new connection, in order, before its first query,
// and not again when the connection is reused; AfterConnect runs after it
// with the real connection and the caller's values.
func TestInitSQLAndAfterConnectPrepareEachNewConnection(t *testing.T) {
	m := newMock(t)
	m.mock.ExpectExec("SET application_name = 'orders'").WillReturnResult(sqlmock.NewResult(0, 0))
	m.mock.ExpectExec("SET search_path TO app").WillReturnResult(sqlmock.NewResult(0, 0))
	m.expectInt("SELECT 1", 1)
	m.expectInt("SELECT 2", 2)
	var after hookCalls
	fc := &faultConnector{m: m}
	db, c := openDB(t, Config{Connector: fc, Pool: pool.Config{MaxObjects: 1},
		InitSQL:      []string{"SET application_name = 'orders'", "SET search_path TO app"},
		AfterConnect: func(ctx context.Context, conn sqldriver.Conn) error { after.record(ctx, conn); return nil },
	})
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	for i := 1; i <= 2; i++ {
		if n, err := queryInt(ctx, db, "SELECT "+string(rune('0'+i))); err != nil || n != i {
			t.Fatalf("query %d = %d, %v", i, n, err)
		}
	}
	m.met(t) // in order, once
	conns, ctxs := after.got()
	if !slices.Equal(conns, []int{1}) {
		t.Fatalf("AfterConnect called on connections %v; want [1], once", conns)
	}
	if v := ctxs[0].Value(ctxKey{}); v != "caller" {
		t.Errorf("AfterConnect's context has value %v; want the caller's", v)
	}
	if _, ok := ctxs[0].Deadline(); !ok {
		t.Error("AfterConnect's context has no deadline; want CreateTimeout's")
	}
	if s := c.Stats(); s.Creates != 1 {
		t.Errorf("Creates %d; want 1", s.Creates)
	}
}

// A failing InitSQL statement or AfterConnect fails the creation: the caller
// gets the error as it would the real driver's connection error, and the
// connection is closed.
func TestInitSQLOrAfterConnectFailureIsTheCreationsError(t *testing.T) {
	errServer := errors.New(`ERROR: unrecognized configuration parameter "no_such"`)
	errHook := errors.New("AfterConnect: role missing")
	for _, tc := range []struct {
		name string
		cfg  func(cfg *Config, m *mockDB)
		want error
	}{
		{"InitSQL", func(cfg *Config, m *mockDB) {
			m.mock.ExpectExec("SET no_such = 1").WillReturnError(errServer)
			cfg.InitSQL = []string{"SET no_such = 1"}
		}, errServer},
		{"AfterConnect", func(cfg *Config, m *mockDB) {
			cfg.AfterConnect = func(context.Context, sqldriver.Conn) error { return errHook }
		}, errHook},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t)
			fc := &faultConnector{m: m}
			cfg := Config{Connector: fc, Pool: pool.Config{MaxObjects: 1}}
			tc.cfg(&cfg, m)
			db, c := openDB(t, cfg)
			_, err := queryInt(context.Background(), db, "SELECT 1")
			if !errors.Is(err, tc.want) {
				t.Fatalf("query: %v; want the hook's error", err)
			}
			if tc.name == "InitSQL" && !strings.Contains(err.Error(), "SET no_such = 1") {
				t.Errorf("error %q does not name the statement", err)
			}
			s := waitStats(t, c, func(s pool.Stats) bool { return s.Destroys.Rejected == 1 })
			if s.CreateFailures != 1 || s.Total != 0 || !fc.conn(t, 1).closed.Load() {
				t.Errorf("CreateFailures %d, Total %d, closed %v; want 1, 0, the connection closed",
					s.CreateFailures, s.Total, fc.conn(t, 1).closed.Load())
			}
			m.met(t)
		})
	}
}

// An AfterConnect that ignores its context is cut at CreateTimeout by the
// pool: the caller gets an error then, not when the hook returns.
func TestAfterConnectIsBoundedByCreateTimeout(t *testing.T) {
	m := newMock(t)
	release := make(chan struct{})
	defer close(release)
	db, _ := openDB(t, Config{Connector: &faultConnector{m: m},
		Pool:         pool.Config{MaxObjects: 1, CreateTimeout: 20 * time.Millisecond},
		AfterConnect: func(context.Context, sqldriver.Conn) error { <-release; return nil },
	})
	_, err := queryInt(context.Background(), db, "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "did not end within 20ms") {
		t.Fatalf("query: %v; want the pool's CreateTimeout error", err)
	}
}

// BeforeAcquire checks a connection taken from idle, with the caller's
// values and a deadline within TestTimeout, not one made for the caller; a
// connection it rejects is closed and logged, and the caller served by
// another.
func TestBeforeAcquireMayRejectAnIdleConnection(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.expectInt("SELECT 2", 2)
	var calls hookCalls
	errStale := errors.New("search_path changed")
	logger, rec := newRecordingLogger()
	fc := &faultConnector{m: m}
	db, c := openDB(t, Config{Connector: fc,
		Pool: pool.Config{MaxObjects: 1, TestTimeout: time.Minute, Logger: logger, Name: "orders"},
		BeforeAcquire: func(ctx context.Context, conn sqldriver.Conn) error {
			calls.record(ctx, conn)
			if conn.(*faultConn).id == 1 {
				return errStale
			}
			return nil
		},
	})
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	if _, err := queryInt(ctx, db, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if conns, _ := calls.got(); len(conns) != 0 {
		t.Fatalf("BeforeAcquire called on %v for a connection made for the caller", conns)
	}
	if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
		t.Fatalf("query after the rejection = %d, %v", n, err)
	}
	conns, ctxs := calls.got()
	if !slices.Equal(conns, []int{1}) {
		t.Fatalf("BeforeAcquire called on %v; want [1]", conns)
	}
	if v := ctxs[0].Value(ctxKey{}); v != "caller" {
		t.Errorf("BeforeAcquire's context has value %v; want the caller's", v)
	}
	if d, ok := ctxs[0].Deadline(); !ok || time.Until(d) > time.Minute {
		t.Errorf("BeforeAcquire's deadline %v, %v; want within TestTimeout", d, ok)
	}
	if got, want := fc.servedBy(), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("connections serving each query %v; want %v", got, want)
	}
	checkPool(t, c, 2, 1, 1)
	if !fc.conn(t, 1).closed.Load() {
		t.Error("the rejected connection was not closed")
	}
	line := rec.waitLine(t, "connection refused")
	for _, want := range []string{"pool=orders", "hook=BeforeAcquire", errStale.Error()} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
	m.met(t)
}

// AfterRelease runs after a connection is given back, before it idles
// again; an error discards it, and the next query gets a new connection.
// One that outlives TestTimeout discards it too.
func TestAfterReleaseMayDiscardAConnection(t *testing.T) {
	for _, how := range []string{"error", "past TestTimeout"} {
		t.Run(how, func(t *testing.T) {
			m := newMock(t)
			m.expectInt("SELECT 1", 1)
			m.expectInt("SELECT 2", 2)
			var calls hookCalls
			release := make(chan struct{})
			var once sync.Once
			releaseHook := func() { once.Do(func() { close(release) }) }
			defer releaseHook()
			fc := &faultConnector{m: m}
			db, c := openDB(t, Config{Connector: fc,
				Pool: pool.Config{MaxObjects: 1, TestTimeout: 20 * time.Millisecond},
				AfterRelease: func(ctx context.Context, conn sqldriver.Conn) error {
					calls.record(ctx, conn)
					if conn.(*faultConn).id != 1 {
						return nil
					}
					if how == "error" {
						return errors.New("DISCARD ALL failed")
					}
					<-ctx.Done() // past TestTimeout: the pool gives up on it
					<-release    // and it runs on
					return ctx.Err()
				},
			})
			ctx := context.Background()
			if _, err := queryInt(ctx, db, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			if how == "past TestTimeout" {
				// Connection 1 is open until the hook returns: it keeps its
				// slot (MaxObjects 1), and the next query waits for it.
				type result struct {
					n   int
					err error
				}
				got := make(chan result, 1)
				go func() {
					n, err := queryInt(ctx, db, "SELECT 2")
					got <- result{n, err}
				}()
				if s := waitStats(t, c, func(s pool.Stats) bool { return s.Waiting == 1 }); s.Waiting != 1 || s.Total != 1 || fc.made() != 1 {
					t.Fatalf("stats %+v, %d connections made; want the next query waiting for connection 1's slot", s, fc.made())
				}
				releaseHook()
				if r := <-got; r.err != nil || r.n != 2 {
					t.Fatalf("query after the discard = %d, %v", r.n, r.err)
				}
			} else {
				waitStats(t, c, func(s pool.Stats) bool { return s.Total == 0 })
				if n, err := queryInt(ctx, db, "SELECT 2"); err != nil || n != 2 {
					t.Fatalf("query after the discard = %d, %v", n, err)
				}
			}
			if got, want := fc.servedBy(), []int{1, 2}; !slices.Equal(got, want) {
				t.Errorf("connections serving each query %v; want %v", got, want)
			}
			if conns, _ := calls.got(); len(conns) < 1 || conns[0] != 1 {
				t.Errorf("AfterRelease called on %v; want connection 1 first", conns)
			}
			m.met(t)
		})
	}
}
