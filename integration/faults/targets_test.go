package faults

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// targetsEnv turns on the assertions of issue 9's targets for respool.
const targetsEnv = "RESPOOL_FAULT_TARGETS"

func targetsOn() bool { return os.Getenv(targetsEnv) == "1" }

// Issue 9's targets for respool.
const (
	maxAttemptsDown   = 5.0                    // connection attempts/s to a dead server
	maxP99Open        = 50 * time.Millisecond  // caller p99 while the breaker is open
	maxFirstSuccess   = 250 * time.Millisecond // after the server is back
	maxAllSucceeded   = 500 * time.Millisecond
	maxRejected       = 2.0  // rejected attempts/s above the server's limit
	minBaselineShare  = 0.9  // of the plain driver's ok/s there (the margin of a shared 2-core machine)
	minSlowOK         = 45.0 // ok/s of 50 on a slow server
	maxFrozenFullWait = 0.10 // share of calls that wait their full deadline
)

// checkTargets asserts the targets on every respool column of rep.
func checkTargets(t *testing.T, rep *report) {
	for _, col := range rep.cols {
		if !col.client.respool {
			continue
		}
		fail := func(format string, args ...any) {
			t.Errorf("target missed by %s: %s", col, fmt.Sprintf(format, args...))
		}
		if o, ok := rep.outcome("kill", col).(*killOutcome); ok {
			if o.attemptsPerSec > maxAttemptsDown {
				fail("%.0f connection attempts/s to a dead server; want ≤ %.0f", o.attemptsPerSec, maxAttemptsDown)
			}
			if o.p99Down > maxP99Open {
				fail("caller p99 %v while down; want ≤ %v", o.p99Down, maxP99Open)
			}
			if o.first < 0 || o.first > maxFirstSuccess {
				fail("first success %v after the server was back; want ≤ %v", o.first, maxFirstSuccess)
			}
			if !o.allRecovered || o.all > maxAllSucceeded {
				fail("all %d callers succeeded %v after the server was back (all: %v); want ≤ %v",
					callers, o.all, o.allRecovered, maxAllSucceeded)
			}
		}
		if o, ok := rep.outcome("limit", col).(*limitOutcome); ok {
			if o.rejectedPerSec > maxRejected {
				fail("%.0f rejected attempts/s above the server's limit; want ≤ %.0f", o.rejectedPerSec, maxRejected)
			}
			if base := baselineLimit(rep, col.kind); base != nil && o.okPerSec < minBaselineShare*base.okPerSec {
				fail("%.0f ok/s above the server's limit; want ≥ %.0f %% of the plain driver's %.0f",
					o.okPerSec, 100*minBaselineShare, base.okPerSec)
			}
		}
		if o, ok := rep.outcome("slow", col).(*slowOutcome); ok {
			if o.okPerSec < minSlowOK {
				fail("%.1f ok/s on a slow server; want ≥ %.0f", o.okPerSec, minSlowOK)
			}
			if o.peakSampled > poolSize || o.peakServer > poolSize {
				fail("server sessions peaked at %d sampled, %d by %s; want ≤ %d",
					o.peakSampled, o.peakServer, o.serverCounter, poolSize)
			}
		}
		if o, ok := rep.outcome("frozen", col).(*frozenOutcome); ok && o.share() > maxFrozenFullWait {
			fail("%s of calls waited their full deadline on a frozen server; want ≤ %.0f %%",
				percent(o.waitedFull, o.calls), 100*maxFrozenFullWait)
		}
		if o, ok := rep.outcome("leak", col).(*leakOutcome); ok {
			for how, f := range o.forms {
				if !f.reported || !f.stack {
					fail("leak (%v): reported %v, with the taker's stack %v; want both", leakKind(how), f.reported, f.stack)
				}
				if f.slotsBack != poolSize {
					fail("leak (%v): %d of %d connections at once after two collections; want all",
						leakKind(how), f.slotsBack, poolSize)
				}
			}
			if !o.closeOK {
				fail("Close did not return within %v with the leaks lost", closeBound)
			}
		}
	}
}

// baselineLimit returns the limit outcome of kind's plain driver.
func baselineLimit(rep *report, kind string) *limitOutcome {
	for _, col := range rep.cols {
		if col.kind == kind && col.client.baseline {
			o, _ := rep.outcome("limit", col).(*limitOutcome)
			return o
		}
	}
	return nil
}
