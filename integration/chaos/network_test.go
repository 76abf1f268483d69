package chaos

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/respool/respool/chaos"
	"github.com/respool/respool/integration/servers"
)

// frozenBound is how long a call on a frozen server waits before its
// context ends it: a bound on the test, not a wait for something to happen.
const frozenBound = 300 * time.Millisecond

// sleepQuery returns a statement with one argument, the seconds it sleeps
// on the server, and a query counting the sessions running it.
func sleepQuery(s *servers.Server) (sleep, running string) {
	if s.Kind == servers.KindPostgres {
		return "SELECT pg_sleep($1)",
			"SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep($1)' AND state = 'active'"
	}
	return "SELECT SLEEP(?)", "SELECT COUNT(*) FROM information_schema.processlist WHERE info = 'SELECT SLEEP(?)'"
}

// counterTable creates a table with one counter at 0, and returns a
// statement with one argument that adds to it and a function reading it.
func counterTable(t *testing.T, ctx context.Context, s *servers.Server, name string) (add string, read func() int) {
	t.Helper()
	db := plainDB(t, s)
	servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS "+name, "CREATE TABLE "+name+" (k INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+name+" VALUES (1, 0)")
	t.Cleanup(func() { db.ExecContext(context.Background(), "DROP TABLE "+name) })
	add = "UPDATE " + name + " SET n = n + ? WHERE k = 1"
	if s.Kind == servers.KindPostgres {
		add = "UPDATE " + name + " SET n = n + $1 WHERE k = 1"
	}
	return add, func() int {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT n FROM "+name+" WHERE k = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// TestDropAfterAsReal: the network cuts a connection while the server runs
// its statement, and chaos drops a connection after the statement ran.
// (A statement with an argument: pgx reports the cut of a statement without
// one as driver.ErrBadConn, and database/sql sends it again; see
// integration/dbclass.)
func TestDropAfterAsReal(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		sleep, running := sleepQuery(s)
		p, via := proxied(t, s)
		victim := servers.Pinned(t, ctx, plainDB(t, via))
		errc := make(chan error, 1)
		go func() {
			_, err := victim.ExecContext(ctx, sleep, 5)
			errc <- err
		}()
		direct := plainDB(t, s)
		servers.WaitFor(t, ctx, "the statement to run on the server", func() (bool, error) {
			var n int
			err := direct.QueryRowContext(ctx, running).Scan(&n)
			return n > 0, err
		})
		p.Close()
		real := <-errc

		add, counter := counterTable(t, ctx, s, "chaos_lost")
		db, c := chaosDB(t, s, chaos.Fault{Kind: chaos.KindDrop, AfterSend: true})
		_, injected := db.ExecContext(ctx, add, 1)
		same(t, real, injected)
		if n := counter(); n != 1 {
			t.Errorf("the counter is %d: want 1, the dropped statement ran", n)
		}
		if n := c.Stats().Faults["drop"].Injected; n != 1 {
			t.Errorf("%d drops", n)
		}
	})
}

// frozenCtx returns a context for a call on a frozen server: ended by a
// deadline frozenBound from now, or cancelled then when cancel.
func frozenCtx(t *testing.T, cancel bool) context.Context {
	if !cancel {
		ctx, stop := context.WithTimeout(ctxT(t), frozenBound)
		t.Cleanup(stop)
		return ctx
	}
	ctx, stop := context.WithCancel(ctxT(t))
	timer := time.AfterFunc(frozenBound, stop)
	t.Cleanup(func() { timer.Stop(); stop() })
	return ctx
}

// TestFreezeAsReal: a server that stops answering under a connection (the
// network drops every packet), and chaos's frozen statement.
func TestFreezeAsReal(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		for _, cancel := range []bool{false, true} {
			name := "deadline"
			if cancel {
				name = "cancel"
			}
			t.Run(name, func(t *testing.T) {
				p, via := proxied(t, s)
				victim := servers.Pinned(t, ctxT(t), plainDB(t, via))
				servers.MustExec(t, ctxT(t), victim, "SELECT 1")
				p.StopForwarding()
				_, real := victim.ExecContext(frozenCtx(t, cancel), "SELECT 1")

				db, _ := chaosDB(t, s, chaos.Fault{Kind: chaos.KindFreeze})
				frozen := servers.Pinned(t, ctxT(t), db)
				_, injected := frozen.ExecContext(frozenCtx(t, cancel), "SELECT 1")
				same(t, real, injected)
			})
		}
	})
}

// TestConnectFreezeAsReal: a connection attempt to a server that accepts
// and never answers, and chaos's frozen connect.
func TestConnectFreezeAsReal(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		p, via := proxied(t, s)
		p.StopForwarding()
		real := plainDB(t, via).PingContext(frozenCtx(t, false))
		db, _ := chaosDB(t, s, chaos.Fault{Kind: chaos.KindFreeze, On: chaos.OpConnect})
		same(t, real, db.PingContext(frozenCtx(t, false)))
	})
}

// TestLatencyMeasured: the delays added to a real server's calls are
// counted, not timed.
func TestLatencyMeasured(t *testing.T) {
	ctx := ctxT(t)
	db, c := chaosDBConfig(t, chaos.Config{DriverName: "pgx", DSN: pg.DSN(), Seed: 3, Faults: []chaos.Fault{
		{Kind: chaos.KindLatency, Latency: 5 * time.Millisecond, Jitter: 5 * time.Millisecond},
		{Name: "connect", Kind: chaos.KindLatency, On: chaos.OpConnect, Latency: 20 * time.Millisecond},
	}})
	conn := servers.Pinned(t, ctx, db)
	for range 10 {
		servers.MustExec(t, ctx, conn, "SELECT 1")
	}
	s := c.Stats()
	if f := s.Faults["latency"]; f.Injected != 10 || f.Latency < 50*time.Millisecond || f.Latency >= 100*time.Millisecond {
		t.Errorf("statements: %+v; want 10 delays of [5ms, 10ms)", f)
	}
	if f := s.Faults["connect"]; f.Injected != 1 || f.Latency != 20*time.Millisecond {
		t.Errorf("connect: %+v; want one delay of 20ms", f)
	}
}

// failedCalls makes n queries one after another through db and returns the
// numbers of those that failed.
func failedCalls(t *testing.T, ctx context.Context, db *sql.DB, n int) []int {
	t.Helper()
	var failed []int
	for i := 1; i <= n; i++ {
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			failed = append(failed, i)
		}
	}
	return failed
}
