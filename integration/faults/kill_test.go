package faults

import (
	"context"
	"fmt"
	"net"
	"time"
)

// breakerGrace is the start of the down window left out of the latency
// that issue 9 wants low "once the breaker is open".
const breakerGrace = time.Second

type killOutcome struct {
	attemptsPerSec float64       // connection attempts per second while down
	logPerSec      float64       // the pool's log records per second while down; -1: not read
	p99Down        time.Duration // of calls started while down, after breakerGrace
	downCalls      int
	first, all     time.Duration // after the server listened again: first success, every caller's success
	allRecovered   bool          // every caller succeeded within recoverBound
}

// runKill kills the server under a warm pool, keeps it down for
// faultWindow and starts it again.
func runKill(r *run) outcome {
	t, s := r.t, r.set.main
	r.ping(s)
	p, px, l := r.warmLoad(s, "SELECT 1")
	if err := s.Kill(r.ctx); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() { // if the test ends early, for the next scenarios
		if !started {
			ctx, cancel := context.WithTimeout(context.Background(), warmBound)
			defer cancel()
			_ = s.Start(ctx)
		}
	})
	down, attempts0, logs0 := time.Now(), px.Accepted(), len(p.logged())
	listening := watchListening(r.ctx, s.Addr())
	r.window(faultWindow)
	attempts1, logs1 := px.Accepted(), len(p.logged())
	up := time.Now()
	ctx, cancel := context.WithTimeout(r.ctx, warmBound)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("the server did not come back: %v", err)
	}
	started = true
	back := listening()
	if back.IsZero() {
		t.Fatal("the server was ready before it listened")
	}
	recoverErr := l.waitAllOK(r.ctx, up, recoverBound)
	r.finish(l)

	secs := up.Sub(down).Seconds()
	o := &killOutcome{attemptsPerSec: float64(attempts1-attempts0) / secs, logPerSec: -1}
	if p.logged() != nil {
		o.logPerSec = float64(logs1-logs0) / secs
	}
	downCalls := l.started(l.at(down)+breakerGrace, l.at(up))
	o.p99Down, _ = latencies(downCalls)
	o.downCalls = len(downCalls)
	o.first, o.all, o.allRecovered = l.recovery(l.at(up), l.at(back))
	if o.downCalls == 0 {
		t.Errorf("%s made no call while the server was down", r.c.name)
	}
	if o.first < 0 {
		t.Errorf("%s: no call succeeded within %v after the server was back", r.c.name, recoverBound)
	} else if recoverErr != nil {
		t.Logf("%s: %v", r.c.name, recoverErr)
	}
	return o
}

func (o *killOutcome) cells() []cell {
	first, all := "never", "never"
	if o.first >= 0 {
		first = ms(o.first)
		all = ms(o.all)
		if !o.allRecovered {
			all = "not within " + recoverBound.String()
		}
	}
	return []cell{
		{fmt.Sprintf("kill %v: connection attempts/s while down", faultWindow), fmt.Sprintf("%.0f", o.attemptsPerSec)},
		{fmt.Sprintf("kill: caller p99 while down (after its first %v)", breakerGrace), ms(o.p99Down)},
		{"kill: first success after the server listens again", first},
		{fmt.Sprintf("kill: all %d callers succeeded after", callers), all},
		{"kill: pool log lines/s while down", perSec(o.logPerSec)},
	}
}

// watchListening dials addr directly every millisecond until a dial
// succeeds, the moment a restarted server accepts connections again
// (PostgreSQL then refuses logins for a few milliseconds of crash
// recovery); the function returned waits for that moment, or returns the
// zero time if ctx ended first.
func watchListening(ctx context.Context, addr string) func() time.Time {
	got := make(chan time.Time, 1)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		d := net.Dialer{Timeout: 100 * time.Millisecond}
		for {
			if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
				got <- time.Now()
				_ = c.Close()
				return
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				got <- time.Time{}
				return
			}
		}
	}()
	return func() time.Time { return <-got }
}
