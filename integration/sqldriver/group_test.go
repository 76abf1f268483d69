package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// groupDatabases are the two databases of TestGroupSharesOneBudgetOnTheServer:
// a primary and a replica, on one server.
var groupDatabases = [...]string{"respool_primary", "respool_replica"}

// createDatabase creates database name on s, which the test user may use.
func createDatabase(t *testing.T, ctx context.Context, s *servers.Server, name string) {
	t.Helper()
	admin, err := sql.Open(s.DriverName(), s.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	stmts := []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name}
	if s.Kind == servers.KindMariaDB {
		stmts = append(stmts, fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%%'", name, s.User))
	}
	for _, q := range stmts {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %s: %v", s.Kind, q, err)
		}
	}
}

// dsnOf is s's DSN for database name.
func dsnOf(t *testing.T, s *servers.Server, name string) string {
	t.Helper()
	if s.Kind == servers.KindPostgres {
		u, err := url.Parse(s.PgxDSN())
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		return u.String()
	}
	cfg, err := mysql.ParseDSN(s.MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}

// sessionCounter returns a function that reads, from the server's own
// session list, how many sessions of the test user each of groupDatabases
// has, and how many the test user has in all (mon's own excluded). A
// session that has not chosen its database yet counts in the total only.
func sessionCounter(s *servers.Server, mon *sql.DB) func(ctx context.Context) (perDB map[string]int, total int, err error) {
	q := `SELECT COALESCE(datname, ''), count(*) FROM pg_stat_activity
		WHERE usename = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY datname`
	if s.Kind == servers.KindMariaDB {
		q = `SELECT COALESCE(db, ''), COUNT(*) FROM information_schema.processlist
			WHERE user = ? AND id <> CONNECTION_ID() GROUP BY db`
	}
	return func(ctx context.Context) (map[string]int, int, error) {
		rows, err := mon.QueryContext(ctx, q, s.User)
		if err != nil {
			return nil, 0, err
		}
		defer rows.Close()
		perDB, total := map[string]int{}, 0
		for rows.Next() {
			var db string
			var n int
			if err := rows.Scan(&db, &n); err != nil {
				return nil, 0, err
			}
			perDB[db] += n
			total += n
		}
		return perDB, total, rows.Err()
	}
}

// sessionPeaks samples the server's sessions until stopped.
type sessionPeaks struct {
	stop    chan struct{}
	done    chan struct{}
	total   int            // the most sessions of the test user at once
	perDB   map[string]int // the most of each database at once
	samples int
	err     error
}

func sampleSessions(ctx context.Context, count func(context.Context) (map[string]int, int, error)) *sessionPeaks {
	sp := &sessionPeaks{stop: make(chan struct{}), done: make(chan struct{}), perDB: map[string]int{}}
	go func() {
		defer close(sp.done)
		for {
			perDB, total, err := count(ctx)
			if err != nil {
				sp.err = err
				return
			}
			sp.samples++
			sp.total = max(sp.total, total)
			for db, n := range perDB {
				sp.perDB[db] = max(sp.perDB[db], n)
			}
			select {
			case <-sp.stop:
				return
			default:
			}
		}
	}()
	return sp
}

func (sp *sessionPeaks) finish(t *testing.T) {
	t.Helper()
	close(sp.stop)
	<-sp.done
	if sp.err != nil {
		t.Fatalf("counting sessions: %v", sp.err)
	}
}

// run starts n goroutines, in wg, that each run queries sleep queries on db,
// counting in done those that succeed; a goroutine stops at its first error,
// which fails the test.
func run(t *testing.T, ctx context.Context, s *servers.Server, db *sql.DB, n, queries int, wg *sync.WaitGroup, done *atomic.Int64) {
	for range n {
		wg.Go(func() {
			for range queries {
				if _, err := db.ExecContext(ctx, sleepQuery(s, "0.005")); err != nil {
					t.Errorf("query: %v", err)
					return
				}
				done.Add(1)
			}
		})
	}
}

// A primary and a replica database share one budget of 8 connections (a
// respool.Group): the server never holds more than 8 sessions of them
// together, a burst on the primary takes the replica's idle connections'
// slots, and with 64 goroutines split between them both keep being served.
func TestGroupSharesOneBudgetOnTheServer(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		const budget = 8
		for _, name := range groupDatabases {
			createDatabase(t, ctx, s, name)
		}
		g, err := respool.NewGroup(respool.GroupConfig{MaxConns: budget, MaxQueue: 128})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := g.Close(context.Background()); err != nil {
				t.Errorf("Group.Close: %v", err)
			}
		})
		dbs := map[string]*sql.DB{}
		for i, key := range []string{"primary", "replica"} {
			c, err := g.Connector(key, respool.Config{DriverName: s.DriverName(), DSN: dsnOf(t, s, groupDatabases[i])})
			if err != nil {
				t.Fatal(err)
			}
			dbs[key] = sql.OpenDB(c)
			t.Cleanup(func() { _ = dbs[key].Close() })
		}
		count := sessionCounter(s, monitor(t, s))
		peaks := sampleSessions(ctx, count)

		// The replica alone: it takes the whole budget.
		var wg sync.WaitGroup
		var replicaDone, primaryDone atomic.Int64
		run(t, ctx, s, dbs["replica"], 16, 5, &wg, &replicaDone)
		wg.Wait()
		// A burst on the primary while the replica idles: it takes the
		// slots of the replica's idle connections.
		run(t, ctx, s, dbs["primary"], 32, 5, &wg, &primaryDone)
		wg.Wait()
		afterBurst, _, err := count(ctx)
		if err != nil {
			t.Error(err)
		}
		burst := g.Stats()
		// Both at once: 64 goroutines, half on each.
		replicaBefore, primaryBefore := replicaDone.Load(), primaryDone.Load()
		run(t, ctx, s, dbs["replica"], 32, 10, &wg, &replicaDone)
		run(t, ctx, s, dbs["primary"], 32, 10, &wg, &primaryDone)
		wg.Wait()
		peaks.finish(t)
		if t.Failed() {
			return
		}

		st := g.Stats()
		t.Logf("%s: %d samples; server peak %d sessions (primary %d, replica %d); after the burst primary %d, replica %d sessions",
			s.Kind, peaks.samples, peaks.total, peaks.perDB[groupDatabases[0]], peaks.perDB[groupDatabases[1]],
			afterBurst[groupDatabases[0]], afterBurst[groupDatabases[1]])
		t.Logf("%s: evicted %d (replica %d, primary %d), yielded %d (replica %d, primary %d); creates %d; waited for the budget now %d",
			s.Kind, st.Destroys.Evicted, st.Keys["replica"].Destroys.Evicted, st.Keys["primary"].Destroys.Evicted,
			st.Destroys.Yielded, st.Keys["replica"].Destroys.Yielded, st.Keys["primary"].Destroys.Yielded,
			st.Creates, st.WaitingForBudget)
		if peaks.total > budget {
			t.Errorf("the server held %d sessions of the two databases at once; the budget is %d", peaks.total, budget)
		}
		if peaks.samples < 10 || peaks.perDB[groupDatabases[0]] == 0 || peaks.perDB[groupDatabases[1]] == 0 {
			t.Errorf("%d samples, peaks %v: the sampler did not see the load", peaks.samples, peaks.perDB)
		}
		if n := afterBurst[groupDatabases[0]]; n <= budget/2 || burst.Keys["replica"].Destroys.Evicted == 0 {
			t.Errorf("after the primary's burst: primary %d sessions, replica's evicted %d; want more than half the budget, taken from the replica's idle",
				n, burst.Keys["replica"].Destroys.Evicted)
		}
		if r, p := replicaDone.Load()-replicaBefore, primaryDone.Load()-primaryBefore; r != 320 || p != 320 {
			t.Errorf("with both busy: replica served %d, primary %d queries; want 320 each", r, p)
		}
		if st.MaxObjects != budget || st.Total > budget || st.QueueFull != 0 {
			t.Errorf("group stats: MaxObjects %d, Total %d, QueueFull %d; want %d, at most %d, 0", st.MaxObjects, st.Total, st.QueueFull, budget, budget)
		}
	})
}
