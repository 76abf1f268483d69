package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool"
)

// globalStatus reads a MariaDB global status counter.
func globalStatus(t *testing.T, ctx context.Context, mon *sql.DB, name string) int64 {
	t.Helper()
	var n string
	var v int64
	if err := mon.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// hammer runs stmt from goroutines × uses, each use checked.
func hammer(t *testing.T, ctx context.Context, stmt *sql.Stmt, goroutines, uses int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range uses {
				want := g*1000 + i
				var n int
				if err := stmt.QueryRowContext(ctx, want).Scan(&n); err != nil {
					errs <- err
					return
				}
				if n != want+1 {
					errs <- fmt.Errorf("got %d, want %d", n, want+1)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestPreparedStatementIsPreparedOncePerConnection uses one db.Prepare'd
// statement from 32 goroutines 100 times each on MariaDB and counts the
// server's prepares (Com_stmt_prepare): respool prepares it at most once on
// each physical connection it makes, and no more often than plain mysql in
// the same test. Once the *sql.Stmt is closed and each connection used
// again, or the pool closed, the server holds none of them
// (Prepared_stmt_count).
func TestPreparedStatementIsPreparedOncePerConnection(t *testing.T) {
	const goroutines, uses = 32, 100
	ctx := ctxT(t)
	mon := monitor(t, maria)
	query := "SELECT ? + 1"
	prepares := map[string]int64{}
	for _, name := range []string{"respool", "mysql"} {
		t.Run(name, func(t *testing.T) {
			baseline := globalStatus(t, ctx, mon, "Prepared_stmt_count")
			var db *sql.DB
			var c *respool.Connector
			if name == "respool" {
				db, c = openDB(t, withKeys(maria, "respool_max_conns=8"))
			} else {
				db = openPlain(t, maria, 2) // database/sql's default
			}
			before := globalStatus(t, ctx, mon, "Com_stmt_prepare")
			stmt, err := db.PrepareContext(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			hammer(t, ctx, stmt, goroutines, uses)
			prepares[name] = globalStatus(t, ctx, mon, "Com_stmt_prepare") - before
			t.Logf("%s: %d prepares for %d uses", name, prepares[name], goroutines*uses)
			if c != nil {
				made := c.Stats().Creates
				if uint64(prepares[name]) > made {
					t.Errorf("respool prepared the statement %d times on %d connections; want at most once per connection",
						prepares[name], made)
				}
			}
			if err := stmt.Close(); err != nil {
				t.Fatal(err)
			}
			if c != nil {
				// Each connection closes the statement when it is next
				// taken: take them all. Their pings make sure the server
				// has read the close (COM_STMT_CLOSE has no reply).
				warm(t, ctx, db, c.Stats().Total)
			} else {
				// database/sql closed the connections past its idle
				// list, and the server frees their statements as their
				// sessions end, after the close returned: wait for it.
				for globalStatus(t, ctx, mon, "Prepared_stmt_count") != baseline && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if n := globalStatus(t, ctx, mon, "Prepared_stmt_count"); n != baseline {
				t.Errorf("%d statements prepared on the server after the *sql.Stmt was closed; want %d", n, baseline)
			}
		})
	}
	if prepares["respool"] > prepares["mysql"] {
		t.Errorf("respool prepared %d times, plain mysql %d", prepares["respool"], prepares["mysql"])
	}
}

// TestPreparedStatementStaysPreparedOnPostgres checks, on a pool of one
// connection, that a db.Prepare'd statement stays in the session's
// pg_prepared_statements while its *sql.Stmt is open, prepared once (its
// prepare_time does not change with use), and is gone once the *sql.Stmt is
// closed, through respool as through plain pgx.
func TestPreparedStatementStaysPreparedOnPostgres(t *testing.T) {
	ctx := ctxT(t)
	const query = "SELECT $1::int + 41"
	for _, name := range []string{"respool", "pgx"} {
		t.Run(name, func(t *testing.T) {
			var db *sql.DB
			if name == "respool" {
				db, _ = openDB(t, withKeys(pg, "respool_max_conns=1"))
			} else {
				db = openPlain(t, pg, 1)
				db.SetMaxOpenConns(1)
			}
			prepared := func() (n int, at time.Time) {
				t.Helper()
				err := db.QueryRowContext(ctx, "SELECT count(*), max(prepare_time) FROM pg_prepared_statements WHERE statement = $1",
					query).Scan(&n, &at)
				if err != nil && n != 0 {
					t.Fatal(err)
				}
				return n, at
			}
			stmt, err := db.PrepareContext(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			var v int
			if err := stmt.QueryRowContext(ctx, 1).Scan(&v); err != nil || v != 42 {
				t.Fatalf("use = %d, %v", v, err)
			}
			n, first := prepared()
			if n != 1 {
				t.Fatalf("%d statements %q in pg_prepared_statements while the *sql.Stmt is open; want 1", n, query)
			}
			for i := range 10 {
				if err := stmt.QueryRowContext(ctx, i).Scan(&v); err != nil {
					t.Fatal(err)
				}
			}
			if n, at := prepared(); n != 1 || !at.Equal(first) {
				t.Errorf("after 10 more uses: %d statements, prepared at %v (first %v); want 1, prepared once", n, at, first)
			}
			if err := stmt.Close(); err != nil {
				t.Fatal(err)
			}
			if n, _ := prepared(); n != 0 {
				t.Errorf("%d statements %q in pg_prepared_statements after Close; want 0", n, query)
			}
		})
	}
}
