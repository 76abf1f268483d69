package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A caller who moves from the plain driver to respool keeps the driver's
// documented error contracts. Each test runs the same calls through both in
// the same run.

// TestDeadlineEndedStatementIsAPgconnTimeout: pgx documents that
// pgconn.Timeout(err) is true for a statement its context's deadline
// ended. respool asks the server to cancel such a statement (CancelWait),
// and the server's 57014 query_canceled must not hide the timeout.
func TestDeadlineEndedStatementIsAPgconnTimeout(t *testing.T) {
	ctx := ctxT(t)
	dbs := map[string]*sql.DB{
		"pgx":     openPlain(t, pg, 1),
		"respool": func() *sql.DB { db, _ := openDB(t, withKeys(pg, "respool_max_conns=1")); return db }(),
	}
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			if err := db.PingContext(ctx); err != nil { // the statements below find a connection open
				t.Fatal(err)
			}
			for _, call := range []struct {
				name string
				run  func(context.Context) error
			}{
				{"exec", func(ctx context.Context) error { _, err := db.ExecContext(ctx, sleepQuery(pg, "30")); return err }},
				{"query", func(ctx context.Context) error {
					return db.QueryRowContext(ctx, sleepQuery(pg, "30")).Scan(new(any))
				}},
			} {
				qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				err := call.run(qctx)
				cancel()
				if !pgconn.Timeout(err) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s: %v: pgconn.Timeout %v, errors.Is(err, context.DeadlineExceeded) %v; want both true",
						call.name, err, pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded))
				}
				if pgconn.SafeToRetry(err) {
					t.Errorf("%s: %v: pgconn.SafeToRetry true for a statement that ran", call.name, err)
				}
			}
			// A cancelled (not timed out) statement is no timeout, with either.
			qctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			_, err := db.ExecContext(qctx, sleepQuery(pg, "30"))
			if pgconn.Timeout(err) || !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v: pgconn.Timeout %v, errors.Is(err, context.Canceled) %v; want false, true",
					err, pgconn.Timeout(err), errors.Is(err, context.Canceled))
			}
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
				t.Fatalf("after the timeouts: %v", err)
			}
		})
	}
}
