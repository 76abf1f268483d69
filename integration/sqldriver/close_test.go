package sqldriver

import (
	"context"
	"database/sql"
	"testing"

	"github.com/respool/respool/integration/servers"
)

// TestDBCloseReturnsAtOnce closes a *sql.DB with a *sql.Rows and a *sql.Tx
// open and one connection idle, through respool and through the plain
// driver: db.Close returns nil at once (it is called here, not raced against
// a timer: before the fix it waited 30 s and failed), the idle connection is
// closed at once, and the two in use as they are ended.
func TestDBCloseReturnsAtOnce(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		for _, name := range []string{"respool", s.DriverName()} {
			t.Run(name, func(t *testing.T) {
				ctx := ctxT(t)
				count := newConnectionCounter(t, ctx, s, monitor(t, s))
				var db *sql.DB
				if name == "respool" {
					var err error
					if db, err = sql.Open("respool", withKeys(s, "respool_max_conns=3")); err != nil {
						t.Fatal(err)
					}
					defer db.Close()
				} else {
					db = openPlain(t, s, 3)
				}
				warm(t, ctx, db, 3)
				rows, err := db.QueryContext(context.Background(), "SELECT 1")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				waitConnections(t, ctx, count, 3)

				if err := db.Close(); err != nil {
					t.Fatalf("db.Close with a Rows and a Tx open: %v", err)
				}
				waitConnections(t, ctx, count, 2) // the idle one is gone
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				waitConnections(t, ctx, count, 0)
			})
		}
	})
}

// waitConnections waits until count reports want connections; the server
// notices a closed connection asynchronously.
func waitConnections(t *testing.T, ctx context.Context, count func() (int, error), want int) {
	t.Helper()
	for {
		n, err := count()
		if err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the server has %d connections; want %d", n, want)
		}
	}
}
