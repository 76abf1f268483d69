package sqldriver

import (
	"context"
	"database/sql"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

//go:noinline
func loseRows(t *testing.T, db *sql.DB) {
	rows, err := db.QueryContext(context.Background(), "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no row")
	}
	// dropped without Close
}

// TestLostRowsAreFoundByTheGarbageCollector drops a *sql.Rows without Close
// on a pool of one connection opened with sql.Open's defaults and stacks
// recorded (respool_leak_stack=true): within two garbage collections it is
// reported as LEAK-DETECTED with the stack of the code that ran the query,
// its connection is closed on the server and the pool serves the next query. Plain pgx, for comparison, keeps the
// connection busy for ever; so does plain mysql, whose connection keeps a
// goroutine for ever too (goleak would fail this package), so it is left
// out.
func TestLostRowsAreFoundByTheGarbageCollector(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		count := newConnectionCounter(t, ctx, s, monitor(t, s))
		db, c, h := openLogged(t, withKeys(s, "respool_max_conns=1&respool_leak_stack=true"), "LEAK-DETECTED")

		loseRows(t, db)
		waitConnections(t, ctx, count, 1)
		// The pool watches a lease's token once its actor has seen a
		// collection with the lease still out (see pool/leaks.go): the lost
		// rows are found by the collection after that. Back-to-back
		// runtime.GC calls can outrun the actor, so collect until reported.
		gcs := collectUntil(t, ctx, h.seen)
		t.Logf("reported after %d collections", gcs)
		if log := h.String(); !strings.Contains(log, "loseRows") {
			t.Errorf("report %q does not name loseRows, which ran the query", log)
		}
		waitConnections(t, ctx, count, 0) // closed on the server
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatalf("query after the leak, on a pool of one: %v", err)
		}
		if st := c.Stats(); st.LeaksDetected != 1 || st.Total != 1 {
			t.Errorf("pool: LeaksDetected %d, Total %d; want 1, 1", st.LeaksDetected, st.Total)
		}

		if s.Kind != servers.KindPostgres {
			return
		}
		plain := openPlain(t, s, 1)
		plain.SetMaxOpenConns(1)
		loseRows(t, plain)
		runtime.GC()
		runtime.GC()
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		err := plain.QueryRowContext(short, "SELECT 1").Scan(new(int))
		t.Logf("plain %s, one connection, after a lost *sql.Rows: next query: %v", s.DriverName(), err)
	})
}

// collectUntil runs garbage collections until seen receives, giving the
// pool's actor and the runtime's cleanups a moment between them, and returns
// how many it ran; it fails the test when ctx ends first.
func collectUntil(t *testing.T, ctx context.Context, seen <-chan struct{}) int {
	t.Helper()
	for n := 1; ; n++ {
		runtime.GC()
		select {
		case <-seen:
			return n
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("not reported after %d collections", n)
		}
	}
}
