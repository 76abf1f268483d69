package faults

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	reportBound = 2 * time.Second // for a leak report after the collections
	holdBound   = time.Second     // to hold poolSize connections at once
)

type leakOutcome struct {
	forms     [2]leakForm // by leakKind
	closeOK   bool        // Close returned within closeBound while the leaks were lost
	closeTook time.Duration
}

// leakForm is what happened after one way of losing a connection.
type leakForm struct {
	reported  bool // the pool logged a leak report
	stack     bool // naming the function that took the connection
	logged    bool // the suite reads the pool's log
	slotsBack int  // connections the pool gave at once after two collections
}

// leakTakers names the functions that lose the connections, by leakKind:
// a report with the stack of the code that took it names one of them.
var leakTakers = [2][]string{
	leakRows: {"loseSQLRows", "losePgxpoolRows"},
	leakConn: {"loseSQLConn", "losePgxpoolConn"},
}

// runLeak loses a connection each way (leakKind) on a pool of poolSize,
// runs two garbage collections after each, and checks the pool's reports,
// how many connections it gives at once, and its Close.
func runLeak(r *run) outcome {
	t, s := r.t, r.set.main
	r.ping(s)
	p, _ := r.open(s)
	if n := holdAll(r.ctx, p); n != poolSize {
		t.Fatalf("%s gave %d connections at once before any leak; want %d", r.c.name, n, poolSize)
	}
	o := &leakOutcome{}
	var undos []func()
	for _, how := range []leakKind{leakRows, leakConn} {
		before := leakReports(p)
		undo, err := p.leak(r.ctx, how)
		if err != nil {
			t.Fatalf("%s: lose a connection: %v", r.c.name, err)
		}
		if undo != nil {
			undos = append(undos, undo)
		}
		runtime.GC()
		runtime.GC()
		f := &o.forms[how]
		f.logged = p.logged() != nil
		if f.logged {
			// A report naming the other way's taker is a late report of
			// that loss, not of this one.
			other := func(rep string) bool { return names(rep, leakTakers[1-how]) }
			for _, rep := range waitReports(r.ctx, p, len(before), other) {
				f.reported = true
				f.stack = f.stack || names(rep, leakTakers[how])
			}
		}
		f.slotsBack = holdAll(r.ctx, p)
	}

	start := time.Now()
	closed := make(chan struct{})
	go func() {
		_ = p.close()
		close(closed)
	}()
	bound := time.NewTimer(closeBound)
	defer bound.Stop()
	select {
	case <-closed:
		o.closeOK, o.closeTook = true, time.Since(start)
	case <-bound.C:
	}
	for _, undo := range undos {
		undo()
	}
	if !o.closeOK {
		waitClosed := time.NewTimer(closeBound)
		defer waitClosed.Stop()
		select {
		case <-closed:
		case <-waitClosed.C:
			t.Errorf("%s: Close did not return even once the lost connections were given back", r.c.name)
		}
	}
	return o
}

// holdAll takes poolSize connections at once and returns how many the pool
// gave within holdBound; it gives them back once every take has ended.
func holdAll(ctx context.Context, p pool) int {
	ctx, cancel := context.WithTimeout(ctx, holdBound)
	defer cancel()
	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	for range poolSize {
		wg.Go(func() {
			release, err := p.hold(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			releases = append(releases, release)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, release := range releases {
		release()
	}
	return len(releases)
}

// leakReports returns the pool's leak reports so far.
func leakReports(p pool) []string {
	var out []string
	for _, line := range p.logged() {
		if strings.Contains(line, "LEAK-DETECTED") {
			out = append(out, line)
		}
	}
	return out
}

// names says whether a leak report's stack names one of the functions.
func names(report string, functions []string) bool {
	return slices.ContainsFunc(functions, func(fn string) bool { return strings.Contains(report, fn) })
}

// waitReports waits at most reportBound for the pool to log a leak report,
// after the first skip, that is not ignored, and returns those it has.
func waitReports(ctx context.Context, p pool, skip int, ignored func(string) bool) []string {
	ctx, cancel := context.WithTimeout(ctx, reportBound)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		var reports []string
		for _, rep := range leakReports(p)[skip:] {
			if !ignored(rep) {
				reports = append(reports, rep)
			}
		}
		if len(reports) > 0 {
			return reports
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return reports
		}
	}
}

func (o *leakOutcome) cells() []cell {
	form := func(f leakForm) string {
		var rep string
		switch {
		case !f.logged:
			rep = "no report"
		case !f.reported:
			rep = "not reported"
		case f.stack:
			rep = "reported with the taker's stack"
		default:
			rep = "reported, no stack"
		}
		return fmt.Sprintf("%s; %d of %d at once after 2 GCs", rep, f.slotsBack, poolSize)
	}
	closeText := "returns (" + ms(o.closeTook) + ")"
	if !o.closeOK {
		closeText = "blocks until the lost connections are given back"
	}
	return []cell{
		{"leak: rows never closed", form(o.forms[leakRows])},
		{"leak: *sql.Conn dropped with its rows open", form(o.forms[leakConn])},
		{"leak: Close with both lost", closeText},
	}
}
