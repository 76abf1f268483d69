package dbclass

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/respool/respool"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

// This file runs respool.RunInTx and RunInPgxTx on real conflicts: the
// server rolls the first attempt back (PostgreSQL 40001 serialization
// failure, MariaDB 1213 deadlock), and the whole transaction runs again and
// commits, its first attempt leaving no trace.

const txTable = "dbclass_tx"

// txRows creates txTable with rows k = 1 and 2 at n = 0, directly on the
// server, and returns that server connection pool and a function reading
// row k's n.
func txRows(t *testing.T, ctx context.Context, s *servers.Server) (*sql.DB, func(k int) int) {
	t.Helper()
	db := serverDB(t, s)
	servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS "+txTable, "CREATE TABLE "+txTable+" (k INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+txTable+" VALUES (1, 0), (2, 0)")
	t.Cleanup(func() { db.ExecContext(context.Background(), "DROP TABLE "+txTable) })
	return db, func(k int) int {
		var n int
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT n FROM %s WHERE k = %d", txTable, k)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// attempts records the error of each run of a transaction's function.
type attempts []error

func (a *attempts) record(err error) error {
	*a = append(*a, err)
	return err
}

// check wants two runs: the first rolled back with code, the second
// committed.
func (a attempts) check(t *testing.T, runErr error, code string) {
	t.Helper()
	t.Logf("runs: %v; RunInTx: %v", []error(a), runErr)
	if runErr != nil {
		t.Fatalf("RunInTx = %v; want the second attempt to commit", runErr)
	}
	if len(a) != 2 || a[1] != nil {
		t.Fatalf("the function ran %d times (%v); want twice, the second without error", len(a), []error(a))
	}
	if v := dbguard.Classify(a[0]); v.Class != dbguard.ClassTxRetryable || v.Code != code {
		t.Errorf("the first attempt's error %v is %v; want tx-retryable %s", a[0], v, code)
	}
}

// TestRunInTxRetriesSerializationFailure: in the first attempt, another
// session commits an update of the row the serializable transaction read,
// whose own update then fails with 40001. Through respool's database/sql
// driver and through native pgx.
func TestRunInTxRetriesSerializationFailure(t *testing.T) {
	ctx := ctxT(t)
	serializable := []struct {
		name string
		run  func(fn func(q querier) error) error
	}{
		{"database/sql", func(fn func(q querier) error) error {
			db := servers.OpenDB(t, "respool", pg.DSN()+"&respool_max_conns=2")
			return respool.RunInTx(ctx, db, &sql.TxOptions{Isolation: sql.LevelSerializable}, func(tx *sql.Tx) error {
				return fn(sqlQuerier{tx})
			})
		}},
		{"pgx", func(fn func(q querier) error) error {
			conn, err := pgx.Connect(ctx, pg.PgxDSN())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			return respool.RunInPgxTx(ctx, conn, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
				return fn(pgxQuerier{tx})
			})
		}},
	}
	for _, api := range serializable {
		t.Run(api.name, func(t *testing.T) {
			other, n := txRows(t, ctx, pg)
			var runs attempts
			err := api.run(func(q querier) error {
				var before int
				if err := q.queryInt(ctx, "SELECT n FROM "+txTable+" WHERE k = 1", &before); err != nil {
					return runs.record(err)
				}
				if len(runs) == 0 { // the snapshot is taken: another session commits a change
					servers.MustExec(t, ctx, other, "UPDATE "+txTable+" SET n = n + 100 WHERE k = 1")
				}
				return runs.record(q.exec(ctx, "UPDATE "+txTable+" SET n = n + 1 WHERE k = 1"))
			})
			runs.check(t, err, "40001")
			if got := n(1); got != 101 {
				t.Errorf("n = %d; want 101: the other session's 100 and one increment", got)
			}
		})
	}
}

// TestRunInTxRetriesDeadlock: in the first attempt, the transaction and
// another one lock rows 1 and 2 in opposite orders. InnoDB rolls back the
// lighter of the two (fewer rows changed): the other one changed many rows
// first, so RunInTx's transaction gets 1213 and runs again once the other
// has committed.
func TestRunInTxRetriesDeadlock(t *testing.T) {
	ctx := ctxT(t)
	other, n := txRows(t, ctx, maria)
	servers.MustExec(t, ctx, other, "DROP TABLE IF EXISTS dbclass_tx_weight", "CREATE TABLE dbclass_tx_weight (k INT PRIMARY KEY)")
	t.Cleanup(func() { other.ExecContext(context.Background(), "DROP TABLE dbclass_tx_weight") })
	db := servers.OpenDB(t, "respool", maria.DSN()+"&respool_max_conns=2")

	// The other transaction: heavy, holding row 2.
	heavy, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer heavy.Rollback()
	servers.MustExec(t, ctx, heavy, "INSERT INTO dbclass_tx_weight SELECT seq FROM seq_1_to_200",
		"UPDATE "+txTable+" SET n = n + 10 WHERE k = 2")

	heavyDone := make(chan error, 1)
	started := false
	var runs attempts
	err = respool.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE "+txTable+" SET n = n + 1 WHERE k = 1"); err != nil {
			return runs.record(err)
		}
		if len(runs) == 0 { // the other transaction now waits for row 1
			started = true
			go func() {
				_, err := heavy.ExecContext(ctx, "UPDATE "+txTable+" SET n = n + 10 WHERE k = 1")
				if err == nil {
					err = heavy.Commit()
				}
				heavyDone <- err
			}()
		}
		_, err := tx.ExecContext(ctx, "UPDATE "+txTable+" SET n = n + 1 WHERE k = 2")
		return runs.record(err)
	})
	if !started {
		t.Fatalf("RunInTx = %v before the other transaction's turn", err)
	}
	if herr := <-heavyDone; herr != nil {
		t.Fatalf("the other transaction: %v", herr)
	}
	runs.check(t, err, "1213")
	var myErr *mysql.MySQLError
	if !errors.As(runs[0], &myErr) || myErr.Number != 1213 {
		t.Errorf("first attempt: %v; want MySQL error 1213", runs[0])
	}
	if a, b := n(1), n(2); a != 11 || b != 11 {
		t.Errorf("rows = %d, %d; want 11, 11: both transactions once each", a, b)
	}
}

// querier is what the serialization test needs of a database/sql or a pgx
// transaction.
type querier interface {
	queryInt(ctx context.Context, q string, dst *int) error
	exec(ctx context.Context, q string) error
}

type sqlQuerier struct{ tx *sql.Tx }

func (q sqlQuerier) queryInt(ctx context.Context, s string, dst *int) error {
	return q.tx.QueryRowContext(ctx, s).Scan(dst)
}

func (q sqlQuerier) exec(ctx context.Context, s string) error {
	_, err := q.tx.ExecContext(ctx, s)
	return err
}

type pgxQuerier struct{ tx pgx.Tx }

func (q pgxQuerier) queryInt(ctx context.Context, s string, dst *int) error {
	return q.tx.QueryRow(ctx, s).Scan(dst)
}

func (q pgxQuerier) exec(ctx context.Context, s string) error {
	_, err := q.tx.Exec(ctx, s)
	return err
}

// TestRunInTxDoesNotRetryALostCommit: the proxy cuts the connection right
// after COMMIT reached the server, which commits: RunInTx reports an
// unknown outcome and does not run the transaction again (which would
// apply it twice).
func TestRunInTxDoesNotRetryALostCommit(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		_, n := txRows(t, ctx, s)
		commit := "COMMIT" // go-sql-driver/mysql's
		if s.Kind == servers.KindPostgres {
			commit = "commit" // pgx stdlib's
		}
		p := startCutProxy(t, s.Addr(), commit)
		db := servers.OpenDB(t, "respool", strings.Replace(s.DSN(), s.Addr(), p.Addr(), 1)+"&respool_max_conns=2")
		runs := 0
		err := respool.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
			runs++
			_, err := tx.ExecContext(ctx, "UPDATE "+txTable+" SET n = n + 1 WHERE k = 1")
			return err
		})
		waitCounter(t, ctx, func() int { return n(1) }, 1)
		t.Logf("%s: COMMIT sent %d times, the function ran %d times, n = %d; RunInTx: %v", s.Kind, p.cuts.Load(), runs, n(1), err)
		var unknown *respool.TxOutcomeUnknownError
		if !errors.As(err, &unknown) || !errors.Is(err, respool.ErrTxOutcomeUnknown) {
			t.Errorf("RunInTx = %v; want a *TxOutcomeUnknownError", err)
		}
		if runs != 1 || p.cuts.Load() != 1 || n(1) != 1 {
			t.Errorf("the function ran %d times, COMMIT was sent %d times, n = %d; want 1, 1, 1", runs, p.cuts.Load(), n(1))
		}
	})
}
