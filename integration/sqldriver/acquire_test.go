package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// TestAcquireTimeout fills the pool (respool_max_conns=2, every connection
// held by a *sql.Conn of a second *sql.DB on the Connector) and runs a query: with
// respool_acquire_timeout=50ms its caller gets an error matching
// pool.ErrAcquireTimeout that names the bound, after one wait, whether
// database/sql reuses an idle shell or asks for a new connection; a caller
// whose context ends while it waits gets the context's error.
func TestAcquireTimeout(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		for _, path := range []string{"idle shell", "Connect"} {
			t.Run(path, func(t *testing.T) {
				ctx := ctxT(t)
				const conns = 2
				// respool_min_idle makes the connections in the background:
				// no take below waits for a creation, which could outlast
				// the bound on a loaded machine.
				db, c := openDB(t, withKeys(s, "respool_max_conns=2&respool_min_idle=2&respool_acquire_timeout=50ms"))
				waitPool(t, ctx, c, func(st pool.Stats) bool { return st.Idle == conns })
				if path == "Connect" {
					db.SetMaxIdleConns(-1)
				} else {
					warm(t, ctx, db, conns) // database/sql keeps 2 idle shells
				}
				holder := secondDB(t, c) // its *sql.Conns hold the connections; db keeps its idle shells
				for range conns {
					sc, err := holder.Conn(ctx)
					if err != nil {
						t.Fatal(err)
					}
					defer sc.Close()
				}

				err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int))
				if !errors.Is(err, pool.ErrAcquireTimeout) || errors.Is(err, context.DeadlineExceeded) ||
					!strings.Contains(err.Error(), "AcquireTimeout 50ms") {
					t.Fatalf("query on a full pool: %v; want pool.ErrAcquireTimeout naming the 50ms bound", err)
				}
				if st := c.Stats(); st.AcquireTimeouts != 1 {
					t.Errorf("AcquireTimeouts %d; want 1 (one wait for one query)", st.AcquireTimeouts)
				}

			})
		}

		t.Run("context ends first", func(t *testing.T) {
			ctx := ctxT(t)
			db, c := openDB(t, withKeys(s, "respool_max_conns=1&respool_acquire_timeout=1h"))
			sc, err := secondDB(t, c).Conn(ctx) // holds the one connection
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			cctx, cancel := context.WithCancel(ctx)
			res := make(chan error, 1)
			go func() { res <- db.QueryRowContext(cctx, "SELECT 1").Scan(new(int)) }()
			waitPool(t, ctx, c, func(st pool.Stats) bool { return st.Waiting == 1 })
			cancel()
			if err := <-res; !errors.Is(err, context.Canceled) || errors.Is(err, pool.ErrAcquireTimeout) {
				t.Errorf("query whose context ended while it waited: %v; want context.Canceled", err)
			}
		})
	})
}

// secondDB returns another *sql.DB on c, whose *sql.Conns hold c's
// connections without touching the first *sql.DB's idle shells. Closing it
// closes c, as the first one's Close (at the end of the test, after it)
// does.
func secondDB(t *testing.T, c *respool.Connector) *sql.DB {
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
