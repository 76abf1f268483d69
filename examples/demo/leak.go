package main

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// leak drops a *sql.Rows without closing it. Its connection stays in use
// until the garbage collector finds the rows unreachable: respool then logs
// LEAK-DETECTED with the stack that ran the query, closes the connection
// and frees its slot, so that the pool is back at full size.
func (dm *demo) leak(ctx context.Context) error {
	o := dm.opts
	dm.d.heading("3. Leak: a *sql.Rows dropped without Close")
	before := dm.conn.Stats()
	if err := leakRows(dm.db); err != nil {
		return err
	}
	held := dm.conn.Stats()
	dm.d.printf("  leakRows returned; the rows it dropped still hold a connection: %d in use, %d idle",
		held.InUse, held.Idle)

	// The collector finds the rows; run it until the report comes.
	dm.d.printf("  running the garbage collector until respool reports the leak (at most %v)…", o.LeakBound)
	tick := time.NewTicker(o.Tick)
	defer tick.Stop()
	bound := time.NewTimer(o.LeakBound)
	defer bound.Stop()
	var report *leakReport
	for report == nil {
		runtime.GC()
		select {
		case r := <-dm.logs.leaks:
			report = &r
		case <-tick.C:
		case <-bound.C:
			dm.expect(false, "leak reported", "no LEAK-DETECTED within %v", o.LeakBound)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	after := dm.conn.Stats()
	dm.expect(report.pool == mainPool && report.takenAt != "" && after.LeaksDetected == before.LeaksDetected+1,
		"leak reported with its stack",
		"LEAK-DETECTED for pool %q, taken at %s (Stats.LeaksDetected %d)", report.pool, firstFrame(report.takenAt), after.LeaksDetected)

	// Every slot can be held at once again: the leaked one was freed.
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := holdAll(hctx, dm.db, o.MaxConns)
	after = dm.conn.Stats()
	dm.expect(err == nil && after.Destroys.Leaked == before.Destroys.Leaked+1,
		"leaked slot reclaimed",
		"the leaked connection was closed (Stats.Destroys: %+v); %d of %d connections held at once afterwards (err: %v)",
		after.Destroys, n, o.MaxConns, err)
	dm.d.printf("  %s", statusLine(after))
	return nil
}

// leakRows runs a query and drops its rows without Close: the connection
// stays in use. The query's context never ends, so database/sql does not
// close the rows either.
//
//go:noinline
func leakRows(db *sql.DB) error {
	rows, err := db.QueryContext(context.Background(), "SELECT worker FROM "+tableName)
	if err != nil {
		return err
	}
	if !rows.Next() {
		return fmt.Errorf("leakRows: no row: %v", rows.Err())
	}
	return nil // rows dropped here
}

// holdAll takes n connections at once, runs a query on each and gives them
// back; it returns how many it held.
func holdAll(ctx context.Context, db *sql.DB, n int) (int, error) {
	var held int
	for range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			return held, err
		}
		defer conn.Close()
		var one int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			return held, err
		}
		held++
	}
	return held, nil
}

// firstFrame returns the first function of a taken_at stack outside
// respool and database/sql: the code that took the connection.
func firstFrame(stack string) string {
	for line := range strings.Lines(stack) {
		if strings.HasPrefix(line, "\t") || strings.TrimSpace(line) == "" {
			continue // a file:line
		}
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "github.com/respool/respool.") &&
			!strings.HasPrefix(line, "github.com/respool/respool/pool.") &&
			!strings.HasPrefix(line, "database/sql.") {
			return line
		}
	}
	return "?"
}
