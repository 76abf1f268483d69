package faults

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

const (
	faultWindow  = 5 * time.Second  // how long a server stays killed or frozen
	warmBound    = 15 * time.Second // for every caller's first success
	recoverBound = 10 * time.Second // for every caller's success after a fault
	closeBound   = 2 * time.Second  // for a pool's Close
)

// scenarios run in this order, each for every client on every server kind
// it runs on.
var scenarios = []scenario{
	{"kill", runKill, "", "", eager},
	{"limit", runLimit, "", "", eager},
	{"slow", runSlow, "", "", eager},
	{"frozen", runFrozen, "", "", eager},
	{"slow-polite", runSlow, "", "", polite},
	{"frozen-polite", runFrozen, "", "", polite},
	{"leak", runLeak, "respool_leak_stack=on",
		"as a user hunting a leak would: off by default, the taker's stack costs about 1.7 µs a query", eager},
}

type scenario struct {
	name string
	run  func(r *run) outcome
	// respoolKeys are DSN keys respool runs the scenario with, beyond
	// poolKeys, for the reason keysWhy; the report's caption says so.
	respoolKeys, keysWhy string
	// callers is how the scenario's callers call again after an error.
	callers callerModel
}

// outcome is what a scenario measured for one client on one server.
type outcome interface {
	// cells returns the scenario's rows of the report, in order.
	cells() []cell
}

type cell struct{ row, text string }

// run is one scenario for one client on one server kind.
type run struct {
	t     *testing.T
	ctx   context.Context
	c     client
	keys  string // respool's DSN keys beyond poolKeys (scenario.respoolKeys)
	model callerModel
	set   *serverSet
	admin map[*servers.Server]*sql.DB // of set's servers (see openAdmin)
}

// TestFaults runs every scenario for every client, logs the report and
// writes it to reportPath; it asserts issue 9's targets for respool that it
// meets by far, and with RESPOOL_FAULT_TARGETS=1 all of them.
func TestFaults(t *testing.T) {
	rep := newReport()
	admin := map[*servers.Server]*sql.DB{}
	for _, set := range sets {
		admin[set.main] = openAdmin(t, set.main, true)
		admin[set.limited] = openAdmin(t, set.limited, false)
	}
	ran := map[string]bool{} // scenario " for " column
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, set := range sets {
				for _, c := range clients {
					if !c.runsOn(set.kind) {
						continue
					}
					col := column{client: c, kind: set.kind}
					rep.addColumn(col)
					t.Run(col.String(), func(t *testing.T) {
						ran[sc.name+" for "+col.String()] = true
						r := &run{t: t, ctx: suiteCtx, c: c, keys: sc.respoolKeys, model: sc.callers, set: set, admin: admin}
						o := sc.run(r)
						rep.add(sc.name, col, o)
						for _, cl := range o.cells() {
							t.Logf("%s: %s", cl.row, cl.text)
						}
					})
				}
			}
		})
	}
	table := rep.table(time.Since(suiteBegan), scenarios)
	t.Log("\n" + table)
	path := reportPath()
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Errorf("write the report: %v", err)
	} else {
		t.Logf("report written to %s", path)
	}
	selected := strings.Contains(flag.Lookup("test.run").Value.String(), "/")
	for _, msg := range rep.missing(scenarios, ran, selected) {
		t.Errorf("no measurement: %s", msg)
	}
	checkTargets(t, rep)
}

// reportPath is where TestFaults writes the report.
func reportPath() string {
	if p := os.Getenv("RESPOOL_FAULT_REPORT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "respool-faults.md")
}

// open opens r's client on s through a new counting proxy; both are closed
// when the test ends, after which the test waits for s to end every
// session of the test user.
func (r *run) open(s *servers.Server) (pool, *servers.Proxy) {
	t := r.t
	t.Helper()
	px, err := servers.StartProxy(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	open := r.c.open
	if r.keys != "" && r.c.openWith != nil {
		open = r.c.openWith(r.keys)
	}
	p, err := open(px.Server(s))
	if err != nil {
		_ = px.Close()
		t.Fatalf("open %s: %v", r.c.name, err)
	}
	closed := new(atomic.Bool)
	if d, ok := p.(interface{ describe() string }); ok {
		t.Cleanup(func() { // before the Close below
			if s := d.describe(); s != "" {
				t.Logf("%s: %s", r.c.name, s)
			}
		})
	}
	t.Cleanup(func() {
		if !closed.Load() {
			if err := closeWithin(p, closeBound); err != nil {
				t.Errorf("%s: %v", r.c.name, err)
			}
		}
		_ = px.Close()
		if err := waitDrained(r.ctx, s, r.admin[s]); err != nil {
			t.Error(err)
		}
	})
	return &closeOnce{pool: p, closed: closed}, px
}

// warmLoad opens r's client on s, starts callers calling q and waits until
// each has succeeded once. The callers stop when the test ends, before the
// pool closes.
func (r *run) warmLoad(s *servers.Server, q string) (pool, *servers.Proxy, *load) {
	r.t.Helper()
	p, px := r.open(s)
	l := startLoad(p, q, r.model)
	r.t.Cleanup(func() { _ = l.finish() })
	if err := l.waitAllOK(r.ctx, l.t0, warmBound); err != nil {
		r.t.Fatalf("before the fault: %v", err)
	}
	return p, px, l
}

// closeOnce lets a scenario close its pool itself (and measure it), so
// that the cleanup does not close it again.
type closeOnce struct {
	pool
	closed *atomic.Bool
}

func (c *closeOnce) close() error {
	c.closed.Store(true)
	return c.pool.close()
}

// closeWithin closes p and waits at most bound for Close to return; a
// Close that does not return is left running.
func closeWithin(p pool, bound time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- p.close() }()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errors.New("Close did not return within " + bound.String())
	}
}

// window waits out a scenario's measured interval d, failing the test if
// the suite's time runs out first.
func (r *run) window(d time.Duration) {
	r.t.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.ctx.Done():
		r.t.Fatalf("the suite ran out of time (%v)", suiteBound)
	}
}

// finish stops the load, failing the test if a caller is stuck.
func (r *run) finish(l *load) {
	r.t.Helper()
	if err := l.finish(); err != nil {
		r.t.Fatalf("%s: %v", r.c.name, err)
	}
}

// ping makes sure the admin connection to s is open, so that it opens no
// session during a measurement (a fault may have ended its last one).
func (r *run) ping(s *servers.Server) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, warmBound)
	defer cancel()
	if err := r.admin[s].PingContext(ctx); err != nil {
		r.t.Fatalf("admin connection to %s: %v", s.Kind, err)
	}
}

// sleepQuery returns a query of a server kind that sleeps for d and
// returns one integer.
func sleepQuery(kind string, d time.Duration) string {
	seconds := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	if kind == servers.KindPostgres {
		return "SELECT 1 FROM pg_sleep(" + seconds + ")"
	}
	return "SELECT SLEEP(" + seconds + ")"
}
