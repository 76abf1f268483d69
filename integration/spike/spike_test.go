package spike

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// The spike, as HikariCP-benchmark's SpikeLoadTest runs it.
const (
	connectDelay = 150 * time.Millisecond // added by the proxy to every new connection
	query        = "SELECT pg_sleep(0.002)"
	minIdle      = 5
	maxConns     = 50
	requests     = 50 // at once
	// idleTimeout is every pool's idle timeout, and how often it looks for
	// connections idle past it (respool's ValidationInterval, pgxpool's
	// HealthCheckPeriod, database/sql's cleaner, which runs every
	// ConnMaxIdleTime).
	idleTimeout = time.Second
	// settleBound bounds the wait for a pool to close the connections it
	// opened for the spike: a connection idle from the spike's end (and
	// from the end of the creations in flight then, 150 ms later) is closed
	// between idleTimeout and two checks later.
	settleBound = 4 * idleTimeout
	// testBound bounds the whole test: three pools, each warmed (at most
	// 5 connections opened one after another: 750 ms), spiked (tens of ms)
	// and settled (settleBound).
	testBound = 25 * time.Second
)

// Targets for respool (issue 16 item 6). HikariCP opens one connection for
// this spike (it adds connections one at a time, each only while callers
// still wait) and ends it with 5; DBCP2 and Vibur open 45. respool paces
// its creations while connections may be given back (pool/creation.go):
// it opened 1 in each of 20 runs under -race on 2 busy cores (spikes of
// 39–172 ms). More would need the caller of that creation still waiting
// when it ends (150 ms): then 2 more, then 4, so 5 is passed only by a spike
// whose first callers wait about three creation times.
const (
	maxOpenedForSpike = 5
	maxOpenAfterIdle  = minIdle + 1
)

// client is a pool under test, reached through its own proxy.
type client struct {
	name  string
	query func(ctx context.Context) error
	idle  func() int // connections idle in the pool
	close func()
}

// result is what TestSpike measures of a client.
type result struct {
	name       string
	opened     int64         // connections opened from the spike's start to the end of settling
	peak       int64         // the most open at once
	spike      time.Duration // from the release of the 50 requests to the last one's end
	after      int64         // open once settled (or at settleBound)
	settleTime time.Duration // from the spike's end until then
	failed     int           // requests that failed
}

// TestSpike: 50 requests at once on pools idle with 5 connections (max 50)
// when opening a connection takes 150 ms and a query 2 ms. respool must
// serve them from the connections given back, opening at most
// maxOpenedForSpike, and keep at most maxOpenAfterIdle after its idle
// timeout; pgxpool and database/sql over pgx beside it are reported.
func TestSpike(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	opens := []func(*testing.T, context.Context, string) *client{openRespool, openPgxpool, openSQL}
	var results []result
	for _, open := range opens {
		px, err := servers.StartProxy(pg.Addr())
		if err != nil {
			t.Fatal(err)
		}
		px.SetConnectDelay(connectDelay)
		c := open(t, ctx, px.Server(pg).PgxDSN())
		r := spike(t, ctx, c, px)
		c.close()
		if err := px.Close(); err != nil {
			t.Error(err)
		}
		results = append(results, r)
	}
	t.Log("\n" + table(results))

	r := results[0]
	if r.failed > 0 {
		t.Errorf("respool: %d of %d requests failed", r.failed, requests)
	}
	if r.opened > maxOpenedForSpike {
		t.Errorf("respool opened %d connections for a spike of %d requests that the %d idle connections serve in about %v; want at most %d",
			r.opened, requests, minIdle, requests/minIdle*2*time.Millisecond, maxOpenedForSpike)
	}
	if r.after > maxOpenAfterIdle {
		t.Errorf("respool holds %d connections %v after the spike (idle timeout %v); want at most %d", r.after, r.settleTime, idleTimeout, maxOpenAfterIdle)
	}
	for _, r := range results[1:] {
		if r.failed > 0 {
			t.Errorf("%s: %d of %d requests failed", r.name, r.failed, requests)
		}
	}
}

// spike warms c to minIdle idle connections, releases the requests at
// once, then waits, within settleBound, for c to close what it opened
// beyond minIdle. database/sql, which has no minimum, closes a connection
// beyond SetMaxIdleConns as it is given back, and every idle one after its
// idle time: it may be below minIdle at once.
func spike(t *testing.T, ctx context.Context, c *client, px *servers.Proxy) result {
	t.Helper()
	r := result{name: c.name}
	if !waitFor(ctx, 10*time.Second, func() bool { return c.idle() >= minIdle }) {
		t.Fatalf("%s: %d idle connections 10s after opening; want %d", c.name, c.idle(), minIdle)
	}
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			errs <- c.query(ctx)
		})
	}
	ready.Wait()
	before := px.Accepted()
	began := time.Now()
	close(start)
	done.Wait()
	r.spike = time.Since(began)
	close(errs)
	for err := range errs {
		if err != nil {
			r.failed++
			t.Logf("%s: %v", c.name, err)
		}
	}
	ended := time.Now()
	waitFor(ctx, settleBound, func() bool { return px.Open() <= minIdle })
	r.settleTime = time.Since(ended)
	r.after = px.Open()
	r.opened = px.Accepted() - before
	r.peak = px.PeakOpen()
	return r
}

// waitFor polls cond until it holds, for at most bound; it reports whether
// it held.
func waitFor(ctx context.Context, bound time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
	return true
}

func openRespool(t *testing.T, _ context.Context, dsn string) *client {
	dsn += fmt.Sprintf("&respool_min_idle=%d&respool_max_conns=%d&respool_max_idle_time=%s", minIdle, maxConns, idleTimeout)
	db, err := sql.Open("respool", dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := respool.ConnectorOf(db)
	if err != nil {
		t.Fatal(err)
	}
	return &client{
		name:  "respool",
		query: func(ctx context.Context) error { _, err := db.ExecContext(ctx, query); return err },
		idle:  func() int { return c.Stats().Idle },
		close: func() { _ = db.Close() },
	}
}

func openPgxpool(t *testing.T, ctx context.Context, dsn string) *client {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MinConns, cfg.MaxConns = minIdle, maxConns
	cfg.MaxConnIdleTime, cfg.HealthCheckPeriod = idleTimeout, idleTimeout
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &client{
		name:  "pgxpool",
		query: func(ctx context.Context) error { _, err := p.Exec(ctx, query); return err },
		idle:  func() int { return int(p.Stat().IdleConns()) },
		close: p.Close,
	}
}

// openSQL opens database/sql over pgx's stdlib driver, which has no
// minimum: minIdle connections are opened and given back to warm it.
func openSQL(t *testing.T, ctx context.Context, dsn string) *client {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(minIdle)
	db.SetConnMaxIdleTime(idleTimeout)
	var conns []*sql.Conn
	for range minIdle {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		_ = conn.Close()
	}
	return &client{
		name:  "database/sql + pgx stdlib",
		query: func(ctx context.Context) error { _, err := db.ExecContext(ctx, query); return err },
		idle:  func() int { return db.Stats().Idle },
		close: func() { _ = db.Close() },
	}
}

func table(rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| pool (min idle %d, max %d; %d requests at once, connect %v, query 2 ms) | opened for the spike | peak open | spike took | open after idle timeout %v |\n",
		minIdle, maxConns, requests, connectDelay, idleTimeout)
	b.WriteString("| --- | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		failed := ""
		if r.failed > 0 {
			failed = fmt.Sprintf(" (%d failed)", r.failed)
		}
		fmt.Fprintf(&b, "| %s%s | %d | %d | %v | %d (%v after the spike) |\n", r.name, failed, r.opened, r.peak,
			r.spike.Round(time.Millisecond), r.after, r.settleTime.Round(10*time.Millisecond))
	}
	return b.String()
}
