package respool

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/respool/respool/pool"
)

// This file tests how leaks made through database/sql are found.

// logBuffer is a slog.Handler's output, safe to read while the pool logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

//go:noinline
func queryAndDropRows(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) {
	rows, err := q.QueryContext(context.Background(), "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no row")
	}
	// rows is dropped without Close.
}

// collectTwice runs the garbage collector twice: a lost *sql.Rows must be
// found within two collections.
func collectTwice() {
	runtime.GC()
	runtime.GC()
}

func TestDefaultsReportLeaksMadeThroughDatabaseSQL(t *testing.T) {
	m := newMock(t)
	c := newTestConnector(t, Config{Connector: &faultConnector{m: m}})
	if pc := c.pool.Config(); pc.LeakTrackingDisabled || pc.LeakCaptureStack || pc.HoldThreshold != defaultHoldThreshold {
		t.Errorf("leak config %v %v %v; want tracking on, no stacks, HoldThreshold %v",
			!pc.LeakTrackingDisabled, pc.LeakCaptureStack, pc.HoldThreshold, defaultHoldThreshold)
	}
	// A negative threshold turns the hold-time report off, as
	// respool_leak_threshold=off does.
	c = newTestConnector(t, Config{Connector: &faultConnector{m: m}, Pool: pool.Config{HoldThreshold: -1}})
	if pc := c.pool.Config(); pc.LeakTrackingDisabled || pc.LeakCaptureStack || pc.HoldThreshold != 0 {
		t.Errorf("leak config with a negative HoldThreshold %v %v %v; want tracking on and no hold-time report",
			!pc.LeakTrackingDisabled, pc.LeakCaptureStack, pc.HoldThreshold)
	}
	cfg, err := ParseDSN("respool_leak_threshold=off")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DriverName, cfg.Connector = "", &faultConnector{m: m}
	c = newTestConnector(t, *cfg)
	if got := c.pool.Config().HoldThreshold; got != 0 {
		t.Errorf("HoldThreshold %v after respool_leak_threshold=off; want 0, no report", got)
	}
	c = newTestConnector(t, Config{Connector: &faultConnector{m: m}, Pool: pool.Config{HoldThreshold: 7}})
	if got := c.pool.Config().HoldThreshold; got != 7 {
		t.Errorf("HoldThreshold %v; want the one given", got)
	}
}

// A *sql.Rows dropped without Close is found by the garbage collector,
// reported (with the stack of the code that ran the query when stacks are
// recorded), its connection closed and its slot freed.
func TestLostRowsAreFoundByTheGarbageCollector(t *testing.T) {
	for _, stacks := range []bool{false, true} {
		t.Run(fmt.Sprintf("CaptureStack=%v", stacks), func(t *testing.T) { testLostRows(t, stacks) })
	}
}

func testLostRows(t *testing.T, stacks bool) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.expectInt("SELECT 2", 2)
	var log logBuffer
	fc := &faultConnector{m: m}
	db, c := openDB(t, Config{Connector: fc, Pool: pool.Config{MaxObjects: 1, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		LeakCaptureStack: stacks}})

	queryAndDropRows(t, db)
	collectTwice()
	s := waitStats(t, c, func(s pool.Stats) bool { return s.LeaksDetected == 1 && s.Total == 0 })
	if s.LeaksDetected != 1 || s.Destroys.Leaked != 1 {
		t.Fatalf("LeaksDetected %d, Destroys.Leaked %d; want 1, 1", s.LeaksDetected, s.Destroys.Leaked)
	}
	if out := log.String(); !strings.Contains(out, "LEAK-DETECTED") || stacks != strings.Contains(out, "queryAndDropRows") {
		t.Errorf("log %q; want %s, naming queryAndDropRows, which ran the query, if and only if stacks are recorded", out, "LEAK-DETECTED")
	}
	if !fc.conn(t, 1).closed.Load() {
		t.Error("the lost connection was not closed")
	}
	// MaxObjects 1: the next query needs the slot the leak held.
	if n, err := queryInt(context.Background(), db, "SELECT 2"); err != nil || n != 2 {
		t.Fatalf("query after the leak = %d, %v", n, err)
	}
	m.met(t)
}

// Closed rows give the connection back; nothing is reported.
func TestClosedRowsAreNoLeak(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	db, c := openMockDB(t, m, pool.Config{MaxObjects: 1})
	rows, err := db.QueryContext(context.Background(), "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.InUse != 1 {
		t.Errorf("InUse %d while the rows are open; want 1", s.InUse)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	collectTwice()
	checkPool(t, c, 1, 0, 1)
	if s := c.Stats(); s.LeaksDetected != 0 {
		t.Errorf("LeaksDetected %d; want 0", s.LeaksDetected)
	}
	m.met(t)
}

// Rows lost on a *sql.Conn that its user keeps using: the connection is
// reclaimed and closed without racing the user's calls, which then fail with
// a respool error (not driver.ErrBadConn, on which database/sql would wait
// forever for the lost rows to close).
func TestLostRowsOfAConnInUse(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	fc := &faultConnector{m: m}
	db, c := openDB(t, Config{Connector: fc, Pool: pool.Config{MaxObjects: 1}})
	ctx := context.Background()
	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queryAndDropRows(t, sc)
	collectTwice()
	waitStats(t, c, func(s pool.Stats) bool { return s.LeaksDetected == 1 && s.Total == 0 })
	if !fc.conn(t, 1).closed.Load() {
		t.Error("the lost connection was not closed")
	}
	_, err = sc.ExecContext(ctx, "UPDATE t SET n = 1")
	if !errors.Is(err, errReclaimed) {
		t.Errorf("exec on the Conn whose rows were lost: %v; want errReclaimed", err)
	}
	if err := sc.PingContext(ctx); !errors.Is(err, errReclaimed) {
		t.Errorf("ping on the Conn whose rows were lost: %v; want errReclaimed", err)
	}
	m.met(t)
}
