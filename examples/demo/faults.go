package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/chaos"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

// faultPool is the name of the fault step's pool and of its chaos
// Connector.
const faultPool = "demo-faults"

// faultPlan is the fault step's schedule. Times are since the step's pool
// was opened.
type faultPlan struct {
	Workers      int           // concurrent transactions
	Duration     time.Duration // how long they run
	OutageFrom   time.Duration // every connection attempt is refused from OutageFrom…
	OutageTo     time.Duration // …to OutageTo
	ConflictRate float64       // serialization failures: this share of statements
	DropRate     float64       // connections lost: this share of statements
	Lifetime     time.Duration // respool_max_lifetime: connections are renewed, so the outage bites
	TxTimeout    time.Duration // each transaction's context, retries included
	// MaxOutage bounds the outage: it goes on past OutageTo until the
	// breaker has opened, and ends at OutageFrom+MaxOutage at the latest.
	// The breaker opens once half of its last 20 calls failed (at least
	// 10): the statements of the connections still alive when the outage
	// begins fill its window with successes, so it opens only after about
	// 10 refused attempts following the last of them, which the pool
	// spaces out (BackoffMax). A machine busy enough can leave fewer in the
	// planned outage; "circuit opened and closed" then holds all the same,
	// on a longer outage, and says so.
	MaxOutage time.Duration
	// BackoffMax is respool_create_backoff_max, the pool's longest delay
	// between two creations while they fail (default 1s). Backing off to
	// 1s, the pool made 6 to 12 attempts in the rest of a 2s outage, and
	// the breaker opened within it in some runs only (on every database);
	// at most 100ms apart, it opened within 0.1s to 1.7s of the outage's
	// start on a machine kept busy.
	BackoffMax time.Duration
}

func defaultFaultPlan() faultPlan {
	return faultPlan{
		Workers:      8,
		Duration:     8 * time.Second,
		OutageFrom:   3 * time.Second,
		OutageTo:     5 * time.Second,
		ConflictRate: 0.1,
		DropRate:     0.03,
		Lifetime:     300 * time.Millisecond,
		MaxOutage:    8 * time.Second,
		BackoffMax:   100 * time.Millisecond,
		TxTimeout:    3 * time.Second,
	}
}

// failurePause is how long a worker whose transaction failed waits before
// its next one.
const failurePause = 50 * time.Millisecond

// faultTally counts what the fault step's transactions met.
type faultTally struct {
	committed, retriedOK, failed atomic.Int64
	conflicts                    atomic.Int64 // attempts the server rolled back
	connErrs, others             atomic.Int64 // failed transactions, by class
	rejected                     atomic.Int64 // transactions a resilience mechanism refused at once
	deadlines                    atomic.Int64 // transactions that ran into their context's deadline
	afterOutage                  atomic.Int64 // committed, begun after the outage
	slowestFail                  atomic.Int64 // the longest a failed transaction took, in ns
	firstOther                   firstError
}

// faults opens a second pool through the chaos driver and runs
// transactions through faults: serialization failures (retried as whole
// transactions by respool.TxRunner), connections dropped (replaced by the
// pool), and an outage during which every connection attempt is refused
// (callers fail fast, the pool backs off, and recovers when the outage
// ends).
func (dm *demo) faults(ctx context.Context) error {
	fp := dm.opts.Faults
	dm.d.heading("4. Faults: %d workers run transactions for %v through the chaos driver", fp.Workers, fp.Duration)
	dm.d.printf("  injected: serialization failure (%s) on %.0f%% of statements, %.0f%% of statements lose their connection,",
		dm.target.txConflict, 100*fp.ConflictRate, 100*fp.DropRate)
	dm.d.printf("  an outage from %v to %v (longer until the breaker opens, up to %v): every connection attempt refused;",
		fp.OutageFrom, fp.OutageTo, fp.OutageFrom+fp.MaxOutage)
	dm.d.printf("  connections live %v (respool_max_lifetime), and while attempts fail the pool makes them at most %v apart",
		fp.Lifetime, fp.BackoffMax)
	dm.d.printf("  (respool_create_backoff_max; default 1s), so that in the breaker's window (its last 20 calls) they soon outnumber")
	dm.d.printf("  the statements of the connections still alive when the outage began")
	keys := append(dm.poolKeys(faultPool),
		kv{"respool_max_lifetime", fp.Lifetime.String()},
		kv{"respool_create_backoff_max", fp.BackoffMax.String()},
		kv{"chaos_name", faultPool},
		kv{"chaos_seed", "7"},
		kv{"chaos_latency", "1ms"},
		kv{"chaos_latency_jitter", "3ms"},
		kv{"chaos_error", dm.target.txConflict},
		kv{"chaos_error_rate", fmt.Sprint(fp.ConflictRate)},
		kv{"chaos_error_on", "exec"},
		kv{"chaos_drop", "before"},
		kv{"chaos_drop_rate", fmt.Sprint(fp.DropRate)},
		kv{"chaos_refuse", "off"}, // switched on and off by runOutage
	)
	dsn := dm.target.chaosDSN(keys...)
	dm.d.printf(`sql.Open("respool", %q)`, respool.RedactDSN(dsn))
	opened := time.Now()
	db, c, err := dm.open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	cc := chaos.Lookup(faultPool)
	if cc == nil {
		return fmt.Errorf("no chaos Connector named %q", faultPool)
	}
	sumBefore, err := sumN(ctx, dm.db)
	if err != nil {
		return err
	}

	// Conflicts are retried as whole transactions by respool's TxRunner;
	// a transaction that met anything else fails, and its worker comes
	// back a little later.
	txr, err := respool.NewTxRunner(retry.Config[struct{}]{
		MaxAttempts: 8,
		Delay:       delay.Strategy{Kind: delay.Exponential, Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond, Jitter: delay.Full},
	})
	if err != nil {
		return err
	}
	var tally faultTally
	var o outage
	outageDone := make(chan error, 1)
	go func() { outageDone <- runOutage(ctx, fp, opened, cc, c, &o) }()
	stop := make(chan struct{})
	watched := dm.watch(stop, func() string {
		s := c.Stats()
		phase := "      "
		if o.on.Load() {
			phase = "OUTAGE"
		}
		return fmt.Sprintf("%s committed %d (after retry %d), failed %d | conflicts %d, lost/refused %d | conns %d/%d, creates %d, create failures %d, failed fast %d",
			phase, tally.committed.Load(), tally.retriedOK.Load(), tally.failed.Load(), tally.conflicts.Load(), tally.connErrs.Load(),
			s.Total, s.MaxObjects, s.Creates, s.CreateFailures, s.FailedFast)
	})
	// The workers run for Duration, and as long after the outage as
	// planned when it lasted longer.
	workersDone := make(chan struct{})
	var outageErr error
	go func() {
		defer close(workersDone)
		if outageErr = <-outageDone; outageErr != nil {
			return
		}
		end := max(fp.Duration, time.Duration(o.endedAt.Load())+fp.Duration-fp.OutageTo)
		_ = work(ctx, time.Until(opened.Add(end)))
	}()
	loopUntil(fp.Workers, workersDone, func(w, i int) {
		dm.transfer(ctx, db, txr, w, i, opened, &o, &tally)
	})
	close(stop)
	<-watched
	if outageErr != nil {
		return outageErr
	}
	return dm.faultChecks(ctx, c, cc, &o, &tally, sumBefore)
}

// outage is the fault step's outage as it happens.
type outage struct {
	on      atomic.Bool
	endedAt atomic.Int64 // when it ended, since the pool was opened, in ns; 0: not yet
}

// after reports whether t, since the pool was opened, is after the outage.
func (o *outage) after(t time.Duration) bool {
	end := o.endedAt.Load()
	return end != 0 && int64(t) >= end
}

// runOutage refuses every connection attempt (chaos's refuse fault) from
// fp.OutageFrom to fp.OutageTo after opened, or longer, until the breaker
// of c has opened since it began (polled: the outage need not end the
// moment it opens), and at most until fp.OutageFrom+fp.MaxOutage (see
// faultPlan.MaxOutage). It returns once the outage is over, or with ctx's
// error when ctx ends first.
func runOutage(ctx context.Context, fp faultPlan, opened time.Time, cc *chaos.Connector, c *respool.Connector, o *outage) error {
	if err := work(ctx, time.Until(opened.Add(fp.OutageFrom))); err != nil {
		return err
	}
	before := c.ResilienceStats().Breaker.Transitions
	if err := cc.Enable("refuse"); err != nil {
		return err
	}
	o.on.Store(true)
	defer func() {
		_ = cc.Disable("refuse") // it exists: Enable found it
		o.on.Store(false)
		o.endedAt.Store(int64(time.Since(opened)))
	}()
	if err := work(ctx, time.Until(opened.Add(fp.OutageTo))); err != nil {
		return err
	}
	limit := time.NewTimer(time.Until(opened.Add(fp.OutageFrom + fp.MaxOutage)))
	defer limit.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if gs := c.ResilienceStats(); !gs.BreakerOn || gs.Breaker.Transitions > before {
			return nil
		}
		select {
		case <-tick.C:
		case <-limit.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// transfer runs one transaction (two updates) under txr, and counts what
// it met.
func (dm *demo) transfer(ctx context.Context, db *sql.DB, txr *respool.TxRunner, worker, i int, opened time.Time, o *outage, tally *faultTally) {
	fp := dm.opts.Faults
	begun := time.Now()
	tctx, cancel := context.WithTimeout(ctx, fp.TxTimeout)
	defer cancel()
	attempts := 0
	q := "UPDATE " + tableName + " SET n = n + 1 WHERE worker = " + dm.target.ph(1)
	err := txr.RunInTx(tctx, db, nil, func(tx *sql.Tx) error {
		attempts++
		for _, w := range []int{worker, (worker + 1 + i) % fp.Workers} {
			if _, err := tx.ExecContext(tctx, q, w); err != nil {
				if dbguard.IsTxRetryable(err) {
					tally.conflicts.Add(1)
				}
				return err
			}
		}
		return nil
	})
	switch {
	case err == nil:
		tally.committed.Add(1)
		if attempts > 1 {
			tally.retriedOK.Add(1)
		}
		if o.after(begun.Sub(opened)) {
			tally.afterOutage.Add(1)
		}
		return
	case ctx.Err() != nil:
		return // the demo was interrupted: not counted
	case dbguard.IsTxRetryable(err): // conflicts on every attempt: counted above
	case errors.Is(err, resilience.ErrRejected):
		tally.rejected.Add(1)
	case dbguard.Classify(err).IsConnectRetryable():
		tally.connErrs.Add(1)
	case tctx.Err() == nil:
		tally.others.Add(1)
		tally.firstOther.set(err)
	}
	tally.failed.Add(1)
	if errors.Is(err, context.DeadlineExceeded) {
		tally.deadlines.Add(1)
	}
	took := int64(time.Since(begun))
	for {
		prev := tally.slowestFail.Load()
		if took <= prev || tally.slowestFail.CompareAndSwap(prev, took) {
			break
		}
	}
	_ = work(ctx, failurePause) // a client that failed comes back a little later
}

// faultChecks checks what the fault step showed.
func (dm *demo) faultChecks(ctx context.Context, c *respool.Connector, cc *chaos.Connector, o *outage, tally *faultTally, sumBefore int64) error {
	cs := cc.Stats()
	s := c.Stats()
	dm.d.printf("  chaos injected: %d serialization failures, %d lost connections, %d refused connection attempts, %v of latency",
		cs.Faults["error"].Injected, cs.Faults["drop"].Injected, cs.Faults["refuse"].Injected, latency(cs).Round(time.Millisecond))
	dm.d.printf("  pool: %d connections made, %d creations failed, %d takes failed fast while creations were held back; destroyed: %v",
		s.Creates, s.CreateFailures, s.FailedFast, s.Destroys)
	note := ""
	if err := tally.firstOther.get(); err != nil {
		note = fmt.Sprintf("; %d attempts failed otherwise (first: %v)", tally.others.Load(), err)
	}
	dm.expect(cs.Faults["error"].Injected > 0 && tally.retriedOK.Load() > 0,
		"serialization failures retried",
		"%d conflicts met; %d transactions committed after a retry (respool.TxRunner)%s",
		tally.conflicts.Load(), tally.retriedOK.Load(), note)
	dm.expect(cs.Faults["drop"].Injected > 0 && s.Creates > uint64(dm.opts.MaxConns),
		"lost connections replaced",
		"%d connections lost under a statement, closed by the pool and replaced (%d made in all)",
		cs.Faults["drop"].Injected, s.Creates)
	dm.outageChecks(cs, s, tally)
	fp := dm.opts.Faults
	lasted := time.Duration(o.endedAt.Load()) - fp.OutageFrom
	if planned := fp.OutageTo - fp.OutageFrom; lasted > planned+50*time.Millisecond {
		dm.d.printf("  the outage lasted %v instead of %v: the breaker had not opened yet (see faultPlan.MaxOutage)",
			lasted.Round(10*time.Millisecond), planned)
	}
	rs := c.ResilienceStats()
	dm.expect(rs.BreakerOn && rs.Breaker.Transitions >= 2 && rs.Breaker.State == breaker.Closed,
		"outage: circuit opened and closed",
		"the breaker opened on the refused connections, let one probe through at a time, and closed when one succeeded: "+
			"%d transitions, %d takes and statements refused while open, now %v (the outage lasted %v)",
		rs.Breaker.Transitions, rs.Rejected, rs.Breaker.State, lasted.Round(10*time.Millisecond))

	sum, err := sumN(ctx, dm.db)
	if err != nil {
		return err
	}
	dm.expect(sum-sumBefore == 2*tally.committed.Load(),
		"no transaction lost or applied twice",
		"%d committed, %d failed; the counters grew by %d = 2 × %d", tally.committed.Load(), tally.failed.Load(),
		sum-sumBefore, tally.committed.Load())
	return nil
}

// outageChecks checks the outage: callers failed fast (the pool fails
// takes at once while its creations are held back) instead of waiting for
// their deadlines, and the pool recovered when it ended.
func (dm *demo) outageChecks(cs chaos.Stats, s pool.Stats, tally *faultTally) {
	fp := dm.opts.Faults
	fast := s.FailedFast + uint64(tally.rejected.Load())
	dm.expect(cs.Faults["refuse"].Injected > 0 && fast > 0,
		"outage: callers failed fast",
		"%d connection attempts refused; %d takes failed at once instead of waiting; %d transactions failed "+
			"(the slowest in %v of its %v, %d at their deadline after their retries)",
		cs.Faults["refuse"].Injected, fast, tally.failed.Load(), time.Duration(tally.slowestFail.Load()).Round(time.Millisecond),
		fp.TxTimeout, tally.deadlines.Load())
	dm.expect(tally.afterOutage.Load() > 0 && s.Total > 0,
		"outage: pool recovered",
		"%d transactions committed after the outage; %d connections open at the end", tally.afterOutage.Load(), s.Total)
}

// latency sums the latency chaos added.
func latency(s chaos.Stats) time.Duration {
	var d time.Duration
	for _, f := range s.Faults {
		d += f.Latency
	}
	return d
}
