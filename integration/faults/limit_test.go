package faults

import (
	"fmt"
	"time"

	"github.com/respool/respool/integration/servers"
)

const (
	limitSessions = 10 // the limited servers' max_connections
	limitOthers   = 2  // sessions another application holds on them
	limitRamp     = 500 * time.Millisecond
	limitWindow   = 3 * time.Second
	limitQuery    = 10 * time.Millisecond
)

type limitOutcome struct {
	rejectedPerSec float64 // attempts the server refused for its limit
	attemptsPerSec float64 // connection attempts (the proxy's count)
	okPerSec       float64
	served         float64 // share of the calls that ended in the window that succeeded
	logPerSec      float64 // the pool's log records per second; -1: not read
	p99, max       time.Duration
	errors         string
}

// runLimit runs limitQuery queries on a server whose session limit leaves
// 8 sessions for a pool of 10.
func runLimit(r *run) outcome {
	t, s := r.t, r.set.limited
	// Opened first, the pool is closed last: after the other application's
	// sessions, so that the server is drained of both. No pool opens a
	// connection before its first call.
	p, px := r.open(s)
	others := holdSessions(t, r.ctx, s, limitOthers)
	var mark pgLogMark
	if s.Kind == servers.KindPostgres {
		var err error
		if mark, err = markPgLog(s); err != nil {
			t.Fatal(err)
		}
	}
	// MariaDB counts every refusal for the limit in Aborted_connects (and
	// those refused before the login, past the extra slot it keeps for a
	// SUPER user, in Connection_errors_max_connections too).
	aborted := func() int64 {
		if s.Kind != servers.KindMariaDB {
			return 0
		}
		st, err := mariadbStatus(r.ctx, others, "Aborted_connects")
		if err != nil {
			t.Fatal(err)
		}
		return st["Aborted_connects"]
	}
	l := startLoad(p, sleepQuery(s.Kind, limitQuery), r.model)
	defer func() { _ = l.finish() }()
	r.window(limitRamp)
	from, attempts0, aborted0, logs0 := time.Now(), px.Accepted(), aborted(), len(p.logged())
	r.window(limitWindow)
	to, attempts1, aborted1, logs1 := time.Now(), px.Accepted(), aborted(), len(p.logged())
	r.finish(l)

	secs := to.Sub(from).Seconds()
	rejected := aborted1 - aborted0
	if s.Kind == servers.KindPostgres {
		evs, err := mark.events(s.Database)
		if err != nil {
			t.Fatal(err)
		}
		rejected = int64(countTooMany(evs, from, to))
	}
	calls, ended := l.started(l.at(from), l.at(to)), l.ended(l.at(from), l.at(to))
	ok := succeeded(ended)
	o := &limitOutcome{
		rejectedPerSec: float64(rejected) / secs,
		attemptsPerSec: float64(attempts1-attempts0) / secs,
		logPerSec:      -1,
		okPerSec:       float64(ok) / secs,
		served:         float64(ok) / float64(max(len(ended), 1)),
		errors:         errorShares(calls),
	}
	o.p99, o.max = latencies(calls)
	if p.logged() != nil {
		o.logPerSec = float64(logs1-logs0) / secs
	}
	if len(calls) == 0 {
		t.Errorf("%s made no call", r.c.name)
	}
	return o
}

func (o *limitOutcome) cells() []cell {
	return []cell{
		{fmt.Sprintf("limit (%d of the server's %d sessions free): rejected attempts/s", limitSessions-limitOthers, limitSessions), fmt.Sprintf("%.0f (of %.0f attempts/s)", o.rejectedPerSec, o.attemptsPerSec)},
		{fmt.Sprintf("limit: ok/s (%v queries)", limitQuery), fmt.Sprintf("%.0f", o.okPerSec)},
		{"limit: caller p99 / max", ms(o.p99) + " / " + ms(o.max)},
		{"limit: errors callers see (share of calls)", o.errors},
		{"limit: pool log lines/s", perSec(o.logPerSec)},
	}
}
