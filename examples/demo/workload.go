package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/respool/respool"
)

// The demo's pool, opened by the first step and used by the next two.
const mainPool = "demo"

// workload opens the demo's pool and its table and runs Workers callers
// for WorkloadTime: each request takes a connection, runs a query (every
// eighth an UPDATE), holds the connection for up to Hold of "work" and gives
// it back. More callers than connections: some wait, and the acquire-wait
// histogram shows how long.
func (dm *demo) workload(ctx context.Context) error {
	o := dm.opts
	dm.d.heading("1. Workload: %d callers share %d connections for %v", o.Workers, o.MaxConns, o.WorkloadTime)
	dsn := dm.target.respoolDSN(dm.poolKeys(mainPool)...)
	dm.d.printf(`sql.Open("respool", %q)`, respool.RedactDSN(dsn))
	db, c, err := dm.open(ctx, dsn)
	if err != nil {
		return err
	}
	dm.db, dm.conn = db, c
	if err := dm.createTable(ctx, db); err != nil {
		return err
	}

	var requests, failures atomic.Int64
	var firstErr firstError
	stop := make(chan struct{})
	watched := dm.watch(stop, func() string {
		return fmt.Sprintf("requests %d | %s", requests.Load(), statusLine(c.Stats()))
	})
	loop(ctx, o.Workers, o.WorkloadTime, func(w, i int) {
		rctx, cancel := context.WithTimeout(ctx, o.RequestTime)
		defer cancel()
		if err := dm.request(rctx, db, w, i); err != nil {
			failures.Add(1)
			firstErr.set(err)
			return
		}
		requests.Add(1)
	})
	close(stop)
	<-watched

	s := c.Stats()
	note := ""
	if err := firstErr.get(); err != nil {
		note = fmt.Sprintf(" (first: %v)", err)
	}
	dm.expect(requests.Load() > 0 && failures.Load() == 0, "workload served",
		"%d requests, %d failed%s, on %d connections", requests.Load(), failures.Load(), note, s.Creates)
	_, ok := s.WaitHistogram.Quantile(0.99)
	dm.expect(s.Waits > 0 && ok, "acquire-wait quantiles",
		"%d of %d takes waited for a connection; wait p50 %s, p90 %s, p99 %s (pool.Stats.WaitHistogram)",
		s.Waits, s.Takes, quantile(s.WaitHistogram, 0.5), quantile(s.WaitHistogram, 0.9), quantile(s.WaitHistogram, 0.99))
	return nil
}

// request is one caller's request: take a connection, query, work, give
// the connection back.
func (dm *demo) request(ctx context.Context, db *sql.DB, worker, i int) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	t := dm.target
	if i%8 == 7 {
		_, err = conn.ExecContext(ctx, "UPDATE "+tableName+" SET n = n + 1 WHERE worker = "+t.ph(1), worker)
	} else {
		var n int64
		err = conn.QueryRowContext(ctx, "SELECT n FROM "+tableName+" WHERE worker = "+t.ph(1), worker).Scan(&n)
	}
	if err != nil {
		return err
	}
	return work(ctx, rand.N(dm.opts.Hold)+1)
}

// work stands for what a request does with its connection besides queries.
func work(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// createTable makes the demo's table with one row per worker (of the
// workload and of the fault step), n = 0. On a server, a table left by an
// earlier run is dropped first, and the table is dropped at the end.
func (dm *demo) createTable(ctx context.Context, db *sql.DB) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + tableName,
		"CREATE TABLE " + tableName + " (worker INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	rows := max(dm.opts.Workers, dm.opts.Faults.Workers)
	for w := range rows {
		if _, err := db.ExecContext(ctx, "INSERT INTO "+tableName+" (worker, n) VALUES ("+dm.target.ph(1)+", 0)", w); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	prev := dm.target.cleanup
	dm.target.cleanup = func() error {
		// The pool may be closed by now: a connection of its own.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		db, err := sql.Open("respool", dm.target.respoolDSN(kv{"respool_name", "demo-cleanup"}))
		if err == nil {
			_, err = db.ExecContext(ctx, "DROP TABLE IF EXISTS "+tableName)
			_ = db.Close()
		}
		if perr := prev(); err == nil {
			err = perr
		}
		return err
	}
	return nil
}

// sumN returns the sum of the table's counters.
func sumN(ctx context.Context, db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, "SELECT COALESCE(SUM(n), 0) FROM "+tableName).Scan(&n)
	return n, err
}
