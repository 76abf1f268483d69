package faults

import (
	"fmt"
	"time"

	"github.com/respool/respool/integration/servers"
)

const (
	slowQuery  = 200 * time.Millisecond // each query's duration on the server
	slowRamp   = time.Second
	slowWindow = 4 * time.Second
)

type slowOutcome struct {
	model         callerModel
	okPerSec      float64
	errors        string // of the calls that started in the window
	peakSampled   int    // server sessions held open, sampled every sampleEvery (countOpen)
	samples       int
	peakServer    int    // server sessions as the server counts them
	serverCounter string // where peakServer comes from
	// serverCountsOpen says that peakServer counts only the sessions the
	// server holds open, as peakSampled does: PostgreSQL's log, whose
	// disconnection line comes before the backend closes its socket; not
	// MariaDB's Max_used_connections, which counts a session the server
	// has disconnected until it has torn it down (rolled back its
	// transaction, freed it; see TestServerCountsASessionItTearsDown).
	serverCountsOpen bool
}

// withinPool reports whether the server held at most poolSize sessions
// open: what respool promises (Config.SessionEndWait frees a slot once the
// server has closed the session's socket). MariaDB's count of sessions it
// still tears down after closing their sockets is reported beside it.
func (o *slowOutcome) withinPool() bool {
	return o.peakSampled <= poolSize && (!o.serverCountsOpen || o.peakServer <= poolSize)
}

// runSlow runs slowQuery queries with callDeadline: a pool of 10 can
// complete 50 a second.
func runSlow(r *run) outcome { return measureSlow(r, slowWindow) }

// measureSlow is runSlow measuring for window after slowRamp.
func measureSlow(r *run, window time.Duration) *slowOutcome {
	t, s := r.t, r.set.main
	r.ping(s)
	admin := r.admin[s]
	var mark pgLogMark
	var base int64
	if s.Kind == servers.KindPostgres {
		var err error
		if mark, err = markPgLog(s); err != nil {
			t.Fatal(err)
		}
	} else {
		// FLUSH STATUS sets Max_used_connections to the sessions open now:
		// the admin's.
		if _, err := admin.ExecContext(r.ctx, "FLUSH STATUS"); err != nil {
			t.Fatal(err)
		}
		st, err := mariadbStatus(r.ctx, admin, "Threads_connected")
		if err != nil {
			t.Fatal(err)
		}
		base = st["Threads_connected"]
	}
	sm := startSampler(s, admin)
	p, _ := r.open(s)
	l := startLoad(p, sleepQuery(s.Kind, slowQuery), r.model)
	defer func() { _ = l.finish() }()
	r.window(slowRamp)
	from := time.Now()
	r.window(window)
	to := time.Now()
	r.finish(l)
	if err := closeWithin(p, closeBound); err != nil {
		t.Errorf("%s: %v", r.c.name, err)
	}
	if err := waitDrained(r.ctx, s, admin); err != nil {
		t.Fatal(err)
	}

	o := &slowOutcome{
		model:    r.model,
		okPerSec: float64(succeeded(l.ended(l.at(from), l.at(to)))) / to.Sub(from).Seconds(),
		errors:   errorShares(l.started(l.at(from), l.at(to))),
	}
	o.peakSampled, o.samples = sm.finish()
	if s.Kind == servers.KindPostgres {
		evs, err := mark.events(s.Database)
		if err != nil {
			t.Fatal(err)
		}
		o.peakServer, o.serverCounter, o.serverCountsOpen = peakSessions(evs), "log", true
	} else {
		st, err := mariadbStatus(r.ctx, admin, "Max_used_connections")
		if err != nil {
			t.Fatal(err)
		}
		o.peakServer, o.serverCounter = int(st["Max_used_connections"]-base), "Max_used_connections"
	}
	if o.samples == 0 || o.peakServer == 0 {
		t.Errorf("%s: no server sessions seen (%d samples, peak %d, %s %d)",
			r.c.name, o.samples, o.peakSampled, o.serverCounter, o.peakServer)
	}
	return o
}

func (o *slowOutcome) cells() []cell {
	return []cell{
		{fmt.Sprintf("slow%s (%v queries, %v deadline): ok/s of %d", o.model.label(), slowQuery, callDeadline,
			poolSize*int(time.Second/slowQuery)), fmt.Sprintf("%.1f", o.okPerSec)},
		{"slow" + o.model.label() + ": errors callers see (share of calls)", o.errors},
		{fmt.Sprintf("slow%s: peak server sessions for a pool of %d, open (sampled) / server's count", o.model.label(), poolSize),
			fmt.Sprintf("%d / %d (%s)", o.peakSampled, o.peakServer, o.serverCounter)},
	}
}
