package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/respool/respool/chaos"
	respool "github.com/respool/respool/driver"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/dbclass"
	"github.com/respool/respool/resilience/delay"
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
	dm.d.printf("  an outage from %v to %v: every connection attempt refused; connections live %v (respool_max_lifetime)",
		fp.OutageFrom, fp.OutageTo, fp.Lifetime)
	keys := append(dm.poolKeys(faultPool),
		kv{"respool_max_lifetime", fp.Lifetime.String()},
		kv{"chaos_name", faultPool},
		kv{"chaos_seed", "7"},
		kv{"chaos_latency", "1ms"},
		kv{"chaos_latency_jitter", "3ms"},
		kv{"chaos_error", dm.target.txConflict},
		kv{"chaos_error_rate", fmt.Sprint(fp.ConflictRate)},
		kv{"chaos_error_on", "exec"},
		kv{"chaos_drop", "before"},
		kv{"chaos_drop_rate", fmt.Sprint(fp.DropRate)},
		kv{"chaos_refuse", "on"},
		kv{"chaos_refuse_during", fp.OutageFrom.String() + "-" + fp.OutageTo.String()},
	)
	dsn := dm.target.chaosDSN(keys...)
	dm.d.printf(`sql.Open("respool", %q)`, respool.RedactDSN(dsn))
	opened := time.Now()
	db, c, err := dm.open(ctx, faultPool, dsn)
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
	txr, err := respool.NewTxRunner(respool.TxConfig{
		MaxAttempts: 8,
		Delay:       delay.Strategy{Kind: delay.Exponential, Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond, Jitter: delay.Full},
	})
	if err != nil {
		return err
	}
	var tally faultTally
	stop := make(chan struct{})
	watched := dm.watch(stop, func() string {
		s := c.Pool().Stats()
		phase := "      "
		if since := time.Since(opened); since >= fp.OutageFrom && since < fp.OutageTo {
			phase = "OUTAGE"
		}
		return fmt.Sprintf("%s committed %d (after retry %d), failed %d | conflicts %d, lost/refused %d | conns %d/%d, creates %d, create failures %d, failed fast %d",
			phase, tally.committed.Load(), tally.retriedOK.Load(), tally.failed.Load(), tally.conflicts.Load(), tally.connErrs.Load(),
			s.Total, s.MaxObjects, s.Creates, s.CreateFailures, s.FailedFast)
	})
	loop(ctx, fp.Workers, fp.Duration-time.Since(opened), func(w, i int) {
		dm.transfer(ctx, db, txr, w, i, opened, &tally)
	})
	close(stop)
	<-watched
	return dm.faultChecks(ctx, c, cc, &tally, sumBefore)
}

// transfer runs one transaction (two updates) under txr, and counts what
// it met.
func (dm *demo) transfer(ctx context.Context, db *sql.DB, txr *respool.TxRunner, worker, i int, opened time.Time, tally *faultTally) {
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
				if dbclass.IsTxRetryable(err) {
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
		if begun.Sub(opened) >= fp.OutageTo {
			tally.afterOutage.Add(1)
		}
		return
	case ctx.Err() != nil:
		return // the demo was interrupted: not counted
	case dbclass.IsTxRetryable(err): // conflicts on every attempt: counted above
	case errors.Is(err, resilience.ErrRejected):
		tally.rejected.Add(1)
	case dbclass.IsConnectRetryable(err):
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
func (dm *demo) faultChecks(ctx context.Context, c *respool.Connector, cc *chaos.Connector, tally *faultTally, sumBefore int64) error {
	cs := cc.Stats()
	s := c.Pool().Stats()
	dm.d.printf("  chaos injected: %d serialization failures, %d lost connections, %d refused connection attempts, %v of latency",
		cs.Injected("error"), cs.Injected("drop"), cs.Injected("refuse"), latency(cs).Round(time.Millisecond))
	dm.d.printf("  pool: %d connections made, %d creations failed, %d takes failed fast while creations were held back; destroyed: %v",
		s.Creates, s.CreateFailures, s.FailedFast, s.Destroys)
	note := ""
	if err := tally.firstOther.get(); err != nil {
		note = fmt.Sprintf("; %d attempts failed otherwise (first: %v)", tally.others.Load(), err)
	}
	dm.expect(cs.Injected("error") > 0 && tally.retriedOK.Load() > 0,
		"serialization failures retried",
		"%d conflicts met; %d transactions committed after a retry (respool.TxRunner)%s",
		tally.conflicts.Load(), tally.retriedOK.Load(), note)
	dm.expect(cs.Injected("drop") > 0 && s.Creates > uint64(dm.opts.MaxConns),
		"lost connections replaced",
		"%d connections lost under a statement, closed by the pool and replaced (%d made in all)",
		cs.Injected("drop"), s.Creates)
	dm.outageChecks(cs, s, tally)
	rs := c.Stats().Resilience
	dm.expect(rs.BreakerOn && rs.Breaker.Transitions >= 2 && rs.Breaker.State == breaker.Closed,
		"outage: circuit opened and closed",
		"the breaker opened on the refused connections, let one probe through at a time, and closed when one succeeded: "+
			"%d transitions, %d takes and statements refused while open, now %v", rs.Breaker.Transitions, rs.Rejected, rs.Breaker.State)

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
	dm.expect(cs.Injected("refuse") > 0 && fast > 0,
		"outage: callers failed fast",
		"%d connection attempts refused; %d takes failed at once instead of waiting; %d transactions failed "+
			"(the slowest in %v of its %v, %d at their deadline after their retries)",
		cs.Injected("refuse"), fast, tally.failed.Load(), time.Duration(tally.slowestFail.Load()).Round(time.Millisecond),
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
