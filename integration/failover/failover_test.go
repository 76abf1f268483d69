package failover

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// Scenario parameters.
const (
	demoteWindow   = 3 * time.Second        // writes measured after the demotion
	outage         = 2 * time.Second        // from the primary's stop to the standby's promotion
	readOnlyWindow = 2 * time.Second        // MariaDB read_only on
	recoverBound   = 5 * time.Second        // for every writer's recovery after promote or read_only off
	rotationWindow = 3 * time.Second        // writes measured after the rotation: a lifetime and more
	lifetime       = 2 * time.Second        // connections' lifetime in the rotation, so that they are dialed again
	closeBound     = 5 * time.Second        // for a pool's close
	baseline       = 500 * time.Millisecond // writes/s measured before the fault
	rotationWarm   = 3 * time.Second        // for the rotation's writers to succeed before it (see openRuns)
)

// outcome is what a scenario measured for one client.
type outcome struct {
	fails        [nClasses]int
	first, all   time.Duration // from the event to the first recovery, to every writer's; -1: none
	firstTakes   time.Duration // promote: from the standby taking writes to the first recovery
	roAfterFirst int
	dials        int64   // connection attempts through the client's proxies in the dial window
	before       float64 // successful writes a second before the fault
	samples      [nClasses]string
	byPort       map[int]int
}

func (o *outcome) failed() int {
	n := 0
	for _, f := range o.fails {
		n += f
	}
	return n
}

// run is a client's load in a scenario, through its own proxies.
type run struct {
	c      client
	l      *load
	pxs    []*servers.Proxy
	before float64 // successful writes a second before the fault
}

func (r *run) dials() int64 {
	var n int64
	for _, px := range r.pxs {
		n += px.Accepted()
	}
	return n
}

// openRuns opens every client of kind that keep accepts on hosts, each
// through a new proxy per host, and starts its writers; recoveries must
// write on targetPort (0: any). Everything stops when the test ends (see
// stop). It waits until every writer has succeeded once.
func openRuns(t *testing.T, kind string, hosts []*servers.Server, tg target, ev *event, targetPort int,
	keep func(client) bool) []*run {
	t.Helper()
	var runs []*run
	for _, c := range clients {
		if c.kind != kind || (keep != nil && !keep(c)) {
			continue
		}
		r := &run{c: c}
		tg := tg
		tg.kind, tg.hosts = kind, nil
		for _, s := range hosts {
			px, err := servers.StartProxy(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = px.Close() })
			r.pxs = append(r.pxs, px)
			tg.hosts = append(tg.hosts, px.Addr())
		}
		w, err := c.open(tg)
		if err != nil {
			t.Fatalf("open %s: %v", c, err)
		}
		t.Cleanup(func() {
			if err := closeWithin(w, closeBound); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		})
		r.l = startLoad(c, w, ev, targetPort)
		t.Cleanup(func() { _ = r.l.finish() }) // before the close above; a second finish is a no-op
		runs = append(runs, r)
	}
	// Every writer must have succeeded before the fault, within warmBound
	// for all the clients. Where connections live a short time (the
	// rotation) they are dialed again and again, each dial a SCRAM exchange
	// that costs tens of milliseconds of CPU under the race detector: on a
	// busy machine a writer may wait its deadline out every time, so a
	// client that has succeeded at all after rotationWarm is enough.
	bound := time.Now().Add(warmBound)
	if tg.lifetime > 0 {
		bound = time.Now().Add(rotationWarm)
	}
	for _, r := range runs {
		if err := r.l.waitWarm(suiteCtx, bound); err != nil && (tg.lifetime == 0 || r.l.oks.Load() == 0) {
			t.Fatal(err)
		} else if err != nil {
			t.Logf("before the rotation: %v", err)
		}
	}
	// The rate before the fault, which says how busy the machine is.
	from, oks := time.Now(), make([]int64, len(runs))
	for i, r := range runs {
		oks[i] = r.l.oks.Load()
	}
	wait(t, from, baseline)
	for i, r := range runs {
		r.before = float64(r.l.oks.Load()-oks[i]) / time.Since(from).Seconds()
	}
	return runs
}

func loads(runs []*run) []*load {
	var ls []*load
	for _, r := range runs {
		ls = append(ls, r.l)
	}
	return ls
}

func dialsOf(runs []*run) []int64 {
	var ds []int64
	for _, r := range runs {
		ds = append(ds, r.dials())
	}
	return ds
}

// stop stops every run's writers and returns their outcomes: times from
// event (and from takes, when not zero), dials between d0 and d1.
func stop(t *testing.T, runs []*run, event, takes time.Time, d0, d1 []int64) map[string]*outcome {
	t.Helper()
	out := map[string]*outcome{}
	for _, r := range runs {
		r.l.ev.end.CompareAndSwap(0, time.Now().UnixNano())
		r.l.halt()
	}
	for i, r := range runs {
		if err := r.l.finish(); err != nil {
			t.Fatal(err)
		}
		first, all := r.l.recovered()
		o := &outcome{first: -1, all: -1, firstTakes: -1, dials: d1[i] - d0[i], before: r.before}
		if !first.IsZero() {
			o.first = first.Sub(event)
			if !takes.IsZero() {
				o.firstTakes = max(0, first.Sub(takes)) // 0: before the harness's own look saw the standby take writes
			}
		}
		if !all.IsZero() {
			o.all = all.Sub(event)
		}
		r.l.mu.Lock()
		o.fails, o.samples, o.roAfterFirst, o.byPort = r.l.fails, r.l.sample, r.l.roAfterFirst, r.l.byPort
		r.l.mu.Unlock()
		out[r.c.key()] = o
		t.Logf("%s: %.0f writes/s before; %d failed %v, first recovery %v, all %v, dials %d, successes by port %v", r.c, o.before, o.failed(),
			o.fails, o.first, o.all, o.dials, o.byPort)
		for c, s := range o.samples {
			if s != "" {
				t.Logf("%s: first %s error: %s", r.c, class(c), s)
			}
		}
	}
	return out
}

// wait waits until d has passed since from, failing when the suite's time
// runs out first.
func wait(t *testing.T, from time.Time, d time.Duration) {
	t.Helper()
	tm := time.NewTimer(time.Until(from.Add(d)))
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-suiteCtx.Done():
		t.Fatalf("the suite ran out of time (%v)", suiteBound)
	}
}

// mustExec runs queries on s as the test user.
func mustExec(t *testing.T, s *servers.Server, queries ...string) {
	t.Helper()
	db := servers.OpenDB(t, s.DriverName(), s.DSN())
	servers.MustExec(t, suiteCtx, db, queries...)
	_ = db.Close()
}

func testUser(s *servers.Server) target {
	return target{user: s.User, password: s.Password}
}

// runDemote: the primary is demoted in place (default_transaction_read_only
// on for every session) while the second server, listed after it, takes
// writes. The event is the demotion's start; a recovery is a write on the
// writable server.
func runDemote(t *testing.T) map[string]*outcome {
	for _, s := range []*servers.Server{primary, writable} {
		mustExec(t, s, createTable)
	}
	ev := &event{}
	runs := openRuns(t, servers.KindPostgres, []*servers.Server{primary, writable}, testUser(primary), ev, writable.Port, nil)
	d0 := dialsOf(runs)
	t0 := ev.set(&ev.fault)
	ev.recover.Store(t0.UnixNano())
	t.Cleanup(func() { _ = primary.SetReadOnly(context.Background(), false) })
	if err := primary.SetReadOnly(suiteCtx, true); err != nil {
		t.Fatal(err)
	}
	waitAll(suiteCtx, loads(runs), t0, demoteWindow)
	out := stop(t, runs, t0, time.Time{}, d0, dialsOf(runs))
	if err := primary.SetReadOnly(suiteCtx, false); err != nil {
		t.Fatal(err)
	}
	return out
}

// runPromote: for each PostgreSQL client in turn, on its own pair of
// servers, so that no client's dials or load delay another's recovery:
// the primary stops as in a crash (pg_ctl stop -m immediate), and its
// standby, listed after it, is promoted after outage. The first client's
// primary is the suite's; each next one's is the standby promoted for the
// client before it, its own standby a new one of that server
// (pg_basebackup from a standby would need full_page_writes, which the
// test servers turn off). The event is the promotion's start; a recovery
// is a write on the promoted server. Dials are counted from the stop
// until the standby takes writes.
func runPromote(t *testing.T) map[string]*outcome {
	out := map[string]*outcome{}
	mustExec(t, primary, createTable)
	from, to := primary, standby
	for _, c := range clients {
		if c.kind != servers.KindPostgres {
			continue
		}
		if to == nil {
			s, err := from.StartStandby(suiteCtx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), stopBound)
				defer cancel()
				if err := s.Stop(ctx); err != nil {
					t.Error(err)
				}
			})
			to = s
		}
		maps.Copy(out, promote(t, c, from, to))
		from, to = to, nil
	}
	return out
}

// promote is runPromote's fault for client c: from stops, its standby to
// is promoted.
func promote(t *testing.T, c client, from, to *servers.Server) map[string]*outcome {
	mon := servers.OpenDB(t, to.DriverName(), to.DSN())
	servers.WaitFor(t, suiteCtx, "the table on the standby", func() (bool, error) {
		var ok bool
		err := mon.QueryRowContext(suiteCtx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok)
		return ok, err
	})
	_ = mon.Close()
	ev := &event{}
	runs := openRuns(t, servers.KindPostgres, []*servers.Server{from, to}, testUser(from), ev, to.Port,
		func(k client) bool { return k.key() == c.key() })
	d0 := dialsOf(runs)
	stopped := ev.set(&ev.fault)
	if err := from.StopImmediate(suiteCtx); err != nil {
		t.Fatal(err)
	}
	wait(t, stopped, outage)
	t1 := ev.set(&ev.recover)
	if err := to.Promote(suiteCtx); err != nil {
		t.Fatal(err)
	}
	takes := time.Now()
	d1 := dialsOf(runs)
	t.Logf("%s: the standby took writes %v after the promotion began", c, takes.Sub(t1))
	waitAll(suiteCtx, loads(runs), t1, recoverBound)
	return stop(t, runs, t1, takes, d0, d1)
}

// runReadOnly: MariaDB is read-only (SET GLOBAL read_only=1) for
// readOnlyWindow, then writable again. The event is read_only's end; dials
// are counted while it is on.
func runReadOnly(t *testing.T) map[string]*outcome {
	mustExec(t, maria, createTable)
	ev := &event{}
	runs := openRuns(t, servers.KindMariaDB, []*servers.Server{maria}, testUser(maria), ev, 0, nil)
	d0 := dialsOf(runs)
	t0 := ev.set(&ev.fault)
	t.Cleanup(func() { _ = maria.SetReadOnly(context.Background(), false) })
	if err := maria.SetReadOnly(suiteCtx, true); err != nil {
		t.Fatal(err)
	}
	wait(t, t0, readOnlyWindow)
	t1 := ev.set(&ev.recover)
	d1 := dialsOf(runs)
	if err := maria.SetReadOnly(suiteCtx, false); err != nil {
		t.Fatal(err)
	}
	waitAll(suiteCtx, loads(runs), t1, recoverBound)
	return stop(t, runs, t1, time.Time{}, d0, d1)
}

var rotations atomic.Int64

// runRotation: the password of the clients' user changes (ALTER USER)
// while writers run, on the writable PostgreSQL server and then on
// MariaDB, and the clients' per-dial hooks give the new one from then on;
// connections live lifetime, so that every pool dials again after the
// change. Failures and dials are counted from the change for
// rotationWindow. (One server kind at a time: PostgreSQL's SCRAM dials
// cost the client tens of milliseconds of CPU under the race detector.)
func runRotation(t *testing.T) map[string]*outcome {
	out := map[string]*outcome{}
	for _, s := range []*servers.Server{writable, maria} {
		mustExec(t, s, createTable)
		user, secret := fmt.Sprintf("rotating%d", rotations.Add(1)), new(atomic.Pointer[string])
		old, updated := "old-secret", "new-secret"
		secret.Store(&old)
		if err := s.CreateUser(suiteCtx, user, old); err != nil {
			t.Fatal(err)
		}
		ev := &event{}
		tg := target{user: user, password: old, secret: secret, lifetime: lifetime}
		runs := openRuns(t, s.Kind, []*servers.Server{s}, tg, ev, 0, func(c client) bool { return !rejectReadOnly(c) })
		d0 := dialsOf(runs)
		t0 := ev.set(&ev.fault)
		ev.recover.Store(t0.UnixNano())
		if err := s.SetPassword(suiteCtx, user, updated); err != nil {
			t.Fatal(err)
		}
		secret.Store(&updated)
		wait(t, t0, rotationWindow)
		maps.Copy(out, stop(t, runs, t0, time.Time{}, d0, dialsOf(runs)))
	}
	return out
}

// TestFailover runs every scenario, logs the report and writes it to the
// file RESPOOL_FAILOVER_REPORT names; it asserts the targets respool
// meets, and with RESPOOL_FAILOVER_TARGETS=1 all of issue 16's.
func TestFailover(t *testing.T) {
	beginSuite(t)
	rep := newReport()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			out := sc.run(t)
			for key, o := range out {
				rep.add(sc, key, o)
			}
		})
	}
	table := rep.table(time.Since(suiteBegan))
	t.Log("\n" + table)
	if path := os.Getenv(reportEnv); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
	checkTargets(t, rep)
}
