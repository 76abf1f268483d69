package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// TestWritesResumeOnTheServerThatTakesThem: a multi-host DSN with
// target_session_attrs=read-write lists A, the primary, and B, read-only
// (a standby before its promotion, played by default_transaction_read_only
// on). A is killed; 1.5s later B is made writable. Through respool the
// callers fail fast during the outage, the servers see few dials (the
// watch of the hosts holds one session to B and dials A every 250ms, in
// place of every caller's attempt), and writes resume on B one dial after
// the watch sees B take writes (it asks every 10ms), not after the
// breaker's open delay. pgx's driver beside it, on its own proxies, dials
// both hosts at every attempt (reported, not bounded).
func TestWritesResumeOnTheServerThatTakesThem(t *testing.T) {
	ctx := ctxT(t)
	start := func() *servers.Server {
		s, err := servers.StartPostgres(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
		return s
	}
	a, b := start(), start()
	const table, poolSize, writers = "respool_failover", 10, 16
	const outage = 1500 * time.Millisecond
	for _, s := range []*servers.Server{a, b} {
		servers.MustExec(t, ctx, monitor(t, s), "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (who text)")
	}
	setReadOnly(t, ctx, b, true)

	type client struct {
		name   string
		db     *sql.DB
		pa, pb *servers.Proxy
		mu     sync.Mutex
		oks    [writers][]time.Time // each writer's successful writes begun after A was killed
		warm   [writers]bool        // a write before
		fails  map[string]int       // failed writes by class
		dials  int64                // connections the proxies accepted during the outage
	}
	proxy := func(s *servers.Server) *servers.Proxy {
		p, err := servers.StartProxy(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	var clients []*client
	for _, name := range []string{"respool", "pgx"} {
		c := &client{name: name, pa: proxy(a), pb: proxy(b), fails: map[string]int{}}
		dsn := fmt.Sprintf("postgres://%s:%s@%s,%s/%s?sslmode=disable&target_session_attrs=read-write",
			a.User, a.Password, c.pa.Addr(), c.pb.Addr(), a.Database)
		if name == "respool" {
			c.db, _ = openDB(t, dsn+fmt.Sprintf("&respool_max_conns=%d", poolSize))
		} else {
			c.db = servers.OpenDB(t, "pgx", dsn)
			c.db.SetMaxOpenConns(poolSize)
			c.db.SetMaxIdleConns(poolSize)
		}
		warm(t, ctx, c.db, poolSize)
		clients = append(clients, c)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var killedAt atomic.Int64 // when A was killed, unix nanoseconds
	killedAt.Store(math.MaxInt64)
	for _, c := range clients {
		for w := range writers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					began := time.Now()
					wctx, cancel := context.WithTimeout(ctx, time.Second)
					_, err := c.db.ExecContext(wctx, "INSERT INTO "+table+" VALUES ($1)", c.name)
					cancel()
					now := time.Now()
					c.mu.Lock()
					if err == nil && began.UnixNano() > killedAt.Load() {
						c.oks[w] = append(c.oks[w], now)
					} else if err == nil {
						c.warm[w] = true
					} else {
						c.fails[failoverClass(err)]++
					}
					c.mu.Unlock()
					if err != nil {
						select { // a writer's own pause before it tries again
						case <-stop:
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				}
			})
		}
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	// Every writer of every client has written to A.
	servers.WaitFor(t, ctx, "a write by every writer", func() (bool, error) {
		for _, c := range clients {
			c.mu.Lock()
			n := 0
			for _, ok := range c.warm {
				if ok {
					n++
				}
			}
			c.mu.Unlock()
			if n < writers {
				return false, nil
			}
		}
		return true, nil
	})
	accepted := func(c *client) int64 { return c.pa.Accepted() + c.pb.Accepted() }
	before := map[*client]int64{}
	for _, c := range clients {
		before[c] = accepted(c)
	}
	if err := a.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	killed := time.Now() // no write begun since reaches A
	killedAt.Store(killed.UnixNano())
	select {
	case <-time.After(outage - time.Since(killed)): // the outage: a scenario parameter
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	for _, c := range clients {
		c.dials = accepted(c) - before[c]
	}
	promoted := time.Now() // the promotion begins: B takes writes once its configuration is reloaded
	setReadOnly(t, ctx, b, false)
	// Every writer of every client writes again, within a bound.
	everyone := func(c *client) (first, all time.Duration, ok bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		firsts := make([]time.Time, 0, writers)
		for _, oks := range c.oks {
			if len(oks) == 0 {
				return 0, 0, false
			}
			firsts = append(firsts, oks[0])
		}
		slices.SortFunc(firsts, func(x, y time.Time) int { return x.Compare(y) })
		return firsts[0].Sub(promoted), firsts[len(firsts)-1].Sub(promoted), true
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	servers.WaitFor(t, wctx, "a write on B by every writer", func() (bool, error) {
		for _, c := range clients {
			if _, _, ok := everyone(c); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	close(stop)
	wg.Wait()

	var report strings.Builder
	fmt.Fprintf(&report, "%d writers a client, pools of %d, 1s deadlines, A killed, B writable %v later\n", writers, poolSize, outage)
	fmt.Fprintf(&report, "| client | dials during the outage | first write after B takes writes | every writer | failed writes by class |\n|---|---|---|---|---|\n")
	for _, c := range clients {
		first, all, _ := everyone(c)
		fmt.Fprintf(&report, "| %s | %d | %v | %v | %v |\n", c.name, c.dials, first.Round(time.Millisecond), all.Round(time.Millisecond), c.fails)
	}
	t.Log("\n" + report.String())

	// respool's targets (issue 16): at most 30 dials during the outage,
	// its first write at most 50ms after B takes writes (detection within
	// 10ms, then the parked connection or one dial) and every writer within
	// 500ms. By default they are bounded for a busy machine under -race,
	// where one dial with SCRAM takes 100ms to a second (21-29 dials
	// measured under load; pgx stdlib 80-106): RESPOOL_FAILOVER_TARGETS=1
	// asserts the targets.
	firstMax, allMax, dialsMax := 2*time.Second, 5*time.Second, int64(40)
	if os.Getenv("RESPOOL_FAILOVER_TARGETS") == "1" {
		firstMax, allMax, dialsMax = 50*time.Millisecond, 500*time.Millisecond, 30
	}
	rp := clients[0]
	first, all, _ := everyone(rp)
	if rp.dials > dialsMax {
		t.Errorf("respool dialed %d times during the %v outage; want at most %d", rp.dials, outage, dialsMax)
	}
	if first > firstMax {
		t.Errorf("respool's first write came %v after B was made writable; want at most %v", first, firstMax)
	}
	if all > allMax {
		t.Errorf("respool's writers all wrote within %v after B was made writable; want at most %v", all, allMax)
	}
}

// failoverClass is the class of a failed write, in the failover tests'
// reports.
func failoverClass(err error) string {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, respool.ErrNoWritableServer):
		return "no writable server (fast)"
	case errors.Is(err, resilience.ErrRejected):
		return "rejected (fast)"
	case errors.As(err, new(*pool.OverloadError)):
		return "overloaded (fast)"
	case errors.As(err, &pgErr) && pgErr.Code == "25006", strings.Contains(err.Error(), "read only connection"):
		return "read-only"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case strings.Contains(err.Error(), "refused"), strings.Contains(err.Error(), "EOF"),
		strings.Contains(err.Error(), "broken"), strings.Contains(err.Error(), "reset"):
		return "connection"
	}
	return "other"
}
