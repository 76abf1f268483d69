package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/pool"
)

// queueFull sends Burst callers at once at the pool: MaxConns are served,
// MaxQueue wait for them, and the rest are refused at once with
// pool.ErrQueueFull instead of piling up: a service answers them 503 while
// the ones it accepted are served in time.
func (dm *demo) queueFull(ctx context.Context) error {
	o := dm.opts
	dm.d.heading("2. Queue full: %d callers at once, each holding a connection for %v", o.Burst, o.BurstHold)
	before := dm.conn.Stats()
	var served, refused, others atomic.Int64
	var refusal, other firstError
	stop := make(chan struct{})
	watched := dm.watch(stop, func() string {
		return fmt.Sprintf("served %d, refused %d | %s", served.Load(), refused.Load(), statusLine(dm.conn.Stats()))
	})
	bctx, cancel := context.WithTimeout(ctx, 10*o.BurstHold*time.Duration(1+o.Burst/o.MaxConns))
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range o.Burst {
		wg.Go(func() {
			<-start
			err := dm.burstCall(bctx)
			switch {
			case err == nil:
				served.Add(1)
			case errors.Is(err, pool.ErrQueueFull):
				refused.Add(1)
				refusal.set(err)
			default:
				others.Add(1)
				other.set(err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	<-watched

	after := dm.conn.Stats()
	if err := refusal.get(); err != nil {
		dm.d.printf("  a refused caller got: %v", err)
	}
	note := ""
	if err := other.get(); err != nil {
		note = fmt.Sprintf("; %d other errors (first: %v)", others.Load(), err)
	}
	dm.expect(refused.Load() > 0 && others.Load() == 0 && after.QueueFull-before.QueueFull == uint64(refused.Load()),
		"queue-full rejection",
		"%d served, %d refused at once with pool.ErrQueueFull (Stats.QueueFull +%d)%s",
		served.Load(), refused.Load(), after.QueueFull-before.QueueFull, note)
	return nil
}

// burstCall takes a connection, runs a query on it and holds it for
// BurstHold. database/sql may hand out one of its idle shells, in which
// case the take happens at the first query: its error is the take's.
func (dm *demo) burstCall(ctx context.Context) error {
	conn, err := dm.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
	return work(ctx, dm.opts.BurstHold)
}
