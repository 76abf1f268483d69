package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// pgxPingAfter is how long a pgx connection must have idled for pgx's
// database/sql driver to ping it before reuse (stdlib.Conn.ResetSession).
// Sessions that a server ends while they idle have idled at least that long
// in the scenarios below, so the tests let them.
const pgxPingAfter = time.Second

// openPlain opens s with its plain driver (pgx or mysql), keeping up to
// idle connections idle in database/sql's pool.
func openPlain(t *testing.T, s *servers.Server, idle int) *sql.DB {
	t.Helper()
	db, err := sql.Open(s.DriverName(), s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(idle)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// warm opens n connections on db at once and gives them back, so that n
// sessions idle in the pool.
func warm(t *testing.T, ctx context.Context, db *sql.DB, n int) {
	t.Helper()
	var conns []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// endIdleSessions ends every idle session of the test user but the
// monitor's, as a server that ends idle sessions does, and waits until the
// server has ended them.
//
// It lists the idle sessions until there are at least atLeast: a session
// the pool counts as idle may still be finishing its handshake at the
// server (MariaDB lists it as Sleep only then).
func endIdleSessions(t *testing.T, ctx context.Context, s *servers.Server, atLeast int) int {
	t.Helper()
	mon := monitor(t, s)
	var list, end string
	switch s.Kind {
	case servers.KindPostgres:
		list = `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'
			AND state = 'idle' AND pid <> pg_backend_pid()`
		end = "SELECT pg_terminate_backend($1)"
	default:
		list = `SELECT id FROM information_schema.processlist WHERE db = ? AND command = 'Sleep'
			AND id <> CONNECTION_ID()`
		end = "KILL ?"
	}
	var ids []int64
	servers.WaitFor(t, ctx, fmt.Sprintf("at least %d idle sessions listed", atLeast), func() (bool, error) {
		ids = listIDs(t, ctx, mon, list, s.Database)
		return len(ids) >= atLeast, nil
	})
	ended := ids[:0]
	for _, id := range ids {
		_, err := mon.ExecContext(ctx, end, id)
		var me *mysql.MySQLError
		switch {
		case errors.As(err, &me) && me.Number == mysqlUnknownThread:
			// The session ended between the list and the KILL: one of an
			// earlier pool that closed, which MariaDB lists as Sleep until
			// it has torn it down. Not one of ours: they are idle.
		case err != nil:
			t.Fatalf("%s %d: %v", end, id, err)
		default:
			ended = append(ended, id)
		}
	}
	for _, id := range ended { // the server ends them asynchronously
		waitSessionGone(t, ctx, s, id)
	}
	return len(ended)
}

// listIDs returns the session ids that query lists for database db.
func listIDs(t *testing.T, ctx context.Context, mon *sql.DB, query, db string) []int64 {
	t.Helper()
	rows, err := mon.QueryContext(ctx, query, db)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// mysqlUnknownThread is MariaDB's ER_NO_SUCH_THREAD: KILL of a session that
// is gone.
const mysqlUnknownThread = 1094

// TestSessionsEndedByTheServerFailNoQuery ends the idle sessions of
// respool's pool and of the plain driver's pool (pg_terminate_backend,
// MariaDB's KILL, a restart of either server) and then runs queries on both:
// none may fail. Each real driver's ResetSession finds a dead connection
// when it is taken for reuse; the pool discards it and takes another. The
// minIdle cases end sessions that respool made on its own
// (respool_min_idle) and never handed out: they are checked too.
func TestSessionsEndedByTheServerFailNoQuery(t *testing.T) {
	const conns, queries = 3, 6
	endIdle := func(t *testing.T, ctx context.Context, s *servers.Server) {
		if n := endIdleSessions(t, ctx, s, 2*conns); n < 2*conns {
			t.Fatalf("ended %d idle sessions; want at least %d", n, 2*conns)
		}
	}
	for _, tc := range []struct {
		name    string
		s       func() *servers.Server
		end     func(t *testing.T, ctx context.Context, s *servers.Server)
		minIdle bool // respool's connections are made by respool_min_idle, never used
	}{
		{"postgres/pg_terminate_backend", func() *servers.Server { return pg }, endIdle, false},
		{"postgres/pg_terminate_backend/minIdle", func() *servers.Server { return pg }, endIdle, true},
		{"postgres/restart", func() *servers.Server { return pg }, restartServer, false},
		{"mariadb/KILL", func() *servers.Server { return maria }, endIdle, false},
		{"mariadb/KILL/minIdle", func() *servers.Server { return maria }, endIdle, true},
		{"mariadb/restart", func() *servers.Server { return maria }, restartServer, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			s := tc.s()
			keys := fmt.Sprintf("respool_max_conns=%d", conns)
			if tc.minIdle {
				keys += fmt.Sprintf("&respool_min_idle=%d", conns)
			}
			respool, c := openDB(t, withKeys(s, keys))
			plain := openPlain(t, s, conns)
			if tc.minIdle {
				waitPool(t, ctx, c, func(st pool.Stats) bool { return st.Idle == conns })
			} else {
				warm(t, ctx, respool, conns)
			}
			warm(t, ctx, plain, conns)

			tc.end(t, ctx, s)
			if s.Kind == servers.KindPostgres {
				time.Sleep(pgxPingAfter + 100*time.Millisecond) // the sessions idled: see pgxPingAfter
			}

			failures := func(db *sql.DB) (n int) {
				for i := range queries {
					var got int
					if err := db.QueryRowContext(ctx, "SELECT "+fmt.Sprint(i)).Scan(&got); err != nil {
						t.Logf("query %d: %v", i, err)
						n++
					}
				}
				return n
			}
			plainFailed, respoolFailed := failures(plain), failures(respool)
			t.Logf("failed queries of %d: respool %d, plain %s %d", queries, respoolFailed, s.DriverName(), plainFailed)
			if respoolFailed != 0 {
				t.Errorf("respool: %d of %d queries failed after the server ended its idle sessions (plain %s: %d)",
					respoolFailed, queries, s.DriverName(), plainFailed)
			}
			dead := func(st pool.Stats) uint64 {
				return st.Destroys.Discarded + st.Destroys.Invalid + st.Destroys.Rejected
			}
			st := waitPool(t, ctx, c, func(st pool.Stats) bool {
				return st.InUse == 0 && st.Total == st.Idle && dead(st) >= conns
			})
			switch {
			case dead(st) != conns:
				t.Errorf("pool: %d dead connections destroyed; want %d", dead(st), conns)
			case !tc.minIdle && st.Total != 1:
				t.Errorf("pool: %d connections open; want 1 (the one made to replace the dead): %+v", st.Total, st)
			}
		})
	}
}

func restartServer(t *testing.T, ctx context.Context, s *servers.Server) {
	t.Helper()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitPool waits until ok holds for the Stats of c's pool, which lag the
// destruction of a connection (done in a goroutine of its own), and returns
// them; it fails the test when ctx ends first.
func waitPool(t *testing.T, ctx context.Context, c *respool.Connector, ok func(pool.Stats) bool) pool.Stats {
	t.Helper()
	for {
		st := c.Stats()
		if ok(st) {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pool stats never got as wanted: %+v", st)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// giveBackOps opens a connection in use of each kind on db (through
// proxy) and returns the calls that end those uses, each bounded by a
// context that ends after deadline (sql.Conn.Close takes none).
func giveBackOps(t *testing.T, ctx context.Context, db *sql.DB, deadline time.Duration) map[string]func() error {
	t.Helper()
	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	rowsCtx, cancel := context.WithTimeout(ctx, deadline)
	t.Cleanup(cancel)
	rows, err := db.QueryContext(rowsCtx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	txCtx, cancel := context.WithTimeout(ctx, deadline)
	t.Cleanup(cancel)
	tx, err := db.BeginTx(txCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(txCtx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	warm(t, ctx, db, 1) // an idle connection for ExecContext
	execCtx, cancel := context.WithTimeout(ctx, deadline)
	t.Cleanup(cancel)
	return map[string]func() error{
		"sql.Conn.Close": sc.Close,
		"Rows.Close":     rows.Close,
		"Tx.Commit":      tx.Commit,
		"DB.ExecContext": func() error {
			_, err := db.ExecContext(execCtx, "SELECT 1")
			return err
		},
	}
}

// TestGiveBackReturnsWhenTheNetworkStops stops the network (a proxy that
// stops forwarding) under connections in use and ends each use, through
// respool and through the plain driver at the same time: every call that
// returns with the plain driver returns with respool too, within the
// caller's deadline (plus a grace for the driver to notice), and
// sql.Conn.Close, which takes no context, within the pool's TestTimeout.
// A hung call's goroutine is left behind until the proxy closes.
func TestGiveBackReturnsWhenTheNetworkStops(t *testing.T) {
	const deadline, testTimeout, grace = 3 * time.Second, time.Second, 5 * time.Second
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		ops := map[string]map[string]func() error{}
		var proxies []*servers.Proxy
		for _, name := range []string{"respool", s.DriverName()} {
			proxy, err := servers.StartProxy(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			proxies = append(proxies, proxy)
			via := proxy.Server(s)
			var db *sql.DB
			if name == "respool" {
				db, _ = openDB(t, withKeys(via, fmt.Sprintf("respool_max_conns=4&respool_test_timeout=%v", testTimeout)))
			} else {
				db = openPlain(t, via, 4)
			}
			t.Cleanup(func() { _ = proxy.Close() }) // before db.Close: Cleanups run last first
			ops[name] = giveBackOps(t, ctx, db, deadline)
		}

		type result struct {
			name, op string
			err      error
		}
		results := make(chan result, 8)
		for _, p := range proxies {
			p.StopForwarding()
		}
		bound := time.After(deadline + grace)
		for name, m := range ops {
			for op, call := range m {
				go func() { results <- result{name, op, call()} }()
			}
		}
		returned := map[string]bool{}
	wait:
		for range 8 {
			select {
			case r := <-results:
				t.Logf("%s: %s returned: %v", r.name, r.op, r.err)
				returned[r.name+" "+r.op] = true
			case <-bound:
				break wait
			}
		}
		for op := range ops["respool"] {
			plain := returned[s.DriverName()+" "+op]
			switch {
			case !returned["respool "+op] && plain:
				t.Errorf("respool: %s still blocked after %v; it returned with plain %s", op, deadline+grace, s.DriverName())
			case !returned["respool "+op] && op == "sql.Conn.Close":
				t.Errorf("respool: sql.Conn.Close still blocked after %v (TestTimeout %v)", deadline+grace, testTimeout)
			case !returned["respool "+op]:
				t.Logf("%s blocks with plain %s too: the real driver's call has no bound", op, s.DriverName())
			}
		}
	})
}
