package respool

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/dbclass"
	"github.com/respool/respool/resilience/delay"
)

// This file tests TxRunner on go-sqlmock (database/sql) and on a fake pgx
// transaction; integration/dbclass runs it on real conflicts, deadlocks and
// a COMMIT cut by a proxy.

var (
	errSerialization = &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access"}
	errDeadlock      = &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
	errUnique        = &pgconn.PgError{Severity: "ERROR", Code: "23505", Message: "duplicate key"}
)

// noDelay runs retries at once.
var noDelay = TxConfig{Delay: delay.Strategy{Kind: delay.None}}

func newTxMock(t *testing.T) (*sql.DB, sqlmock.Sqlmock) {
	t.Helper()
	db, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mock.ExpectationsWereMet(); err != nil {
			t.Error(err)
		}
		_ = db.Close()
	})
	return db, mock
}

func mustRunner(t *testing.T, cfg TxConfig) *TxRunner {
	t.Helper()
	r, err := NewTxRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// update is the function every test runs in its transaction.
func update(tx *sql.Tx) error {
	_, err := tx.ExecContext(context.Background(), "UPDATE t SET n = n + 1")
	return err
}

func TestRunInTxRetriesTheWholeTransaction(t *testing.T) {
	tests := []struct {
		name   string
		expect func(m sqlmock.Sqlmock) // the first attempt, which fails
	}{
		{"a statement fails with 40001", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnError(errSerialization)
			m.ExpectRollback()
		}},
		{"COMMIT fails with 40001", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit().WillReturnError(errSerialization)
		}},
		{"a statement fails with MySQL's deadlock", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnError(errDeadlock)
			m.ExpectRollback()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, m := newTxMock(t)
			tc.expect(m)
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit()
			runs := 0
			err := mustRunner(t, noDelay).RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
				runs++
				return update(tx)
			})
			if err != nil || runs != 2 {
				t.Fatalf("RunInTx = %v after %d runs; want success after 2", err, runs)
			}
		})
	}
}

func TestRunInTxDoesNotRetryOtherErrors(t *testing.T) {
	errMine := errors.New("the caller's own error")
	tests := []struct {
		name   string
		expect func(m sqlmock.Sqlmock)
		fnErr  error // what fn returns instead of running the update
		check  func(t *testing.T, err error)
	}{
		{"the caller's error", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectRollback()
		}, errMine, func(t *testing.T, err error) {
			if err != errMine {
				t.Errorf("err = %v; want fn's error unchanged", err)
			}
		}},
		{"a constraint violation", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnError(errUnique)
			m.ExpectRollback()
		}, nil, func(t *testing.T, err error) {
			if !errors.Is(err, errUnique) {
				t.Errorf("err = %v; want the server's 23505", err)
			}
		}},
		{"COMMIT refused by the server", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit().WillReturnError(errUnique) // a deferred constraint
		}, nil, func(t *testing.T, err error) {
			if !errors.Is(err, errUnique) || errors.Is(err, ErrTxOutcomeUnknown) {
				t.Errorf("err = %v; want the server's 23505, a known outcome", err)
			}
		}},
		{"COMMIT not sent (driver.ErrBadConn)", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit().WillReturnError(sqldriver.ErrBadConn)
		}, nil, func(t *testing.T, err error) {
			if !errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, ErrTxOutcomeUnknown) {
				t.Errorf("err = %v; want driver.ErrBadConn, a known outcome", err)
			}
		}},
		{"COMMIT's answer lost", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit().WillReturnError(fmt.Errorf("read: %w", io.ErrUnexpectedEOF))
		}, nil, checkUnknown},
		{"COMMIT's answer lost, as respool reports it", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit().WillReturnError(ErrStatementLost)
		}, nil, checkUnknown},
		{"COMMIT answered 08007", func(m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit().WillReturnError(&pgconn.PgError{Severity: "FATAL", Code: "08007"})
		}, nil, checkUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, m := newTxMock(t)
			tc.expect(m)
			runs := 0
			err := mustRunner(t, noDelay).RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
				runs++
				if tc.fnErr != nil {
					return tc.fnErr
				}
				return update(tx)
			})
			if runs != 1 {
				t.Errorf("fn ran %d times; want once", runs)
			}
			tc.check(t, err)
		})
	}
}

func checkUnknown(t *testing.T, err error) {
	t.Helper()
	var unknown *TxOutcomeUnknownError
	if !errors.As(err, &unknown) || unknown.Attempt != 1 || !errors.Is(err, ErrTxOutcomeUnknown) ||
		!errors.Is(err, dbclass.ErrAmbiguous) || dbclass.Classify(err).Class != dbclass.ClassAmbiguous {
		t.Errorf("err = %v (%v); want a *TxOutcomeUnknownError of attempt 1, ambiguous", err, dbclass.Classify(err))
	}
}

func TestRunInTxGivesUpAfterMaxAttempts(t *testing.T) {
	db, m := newTxMock(t)
	for range 3 {
		m.ExpectBegin()
		m.ExpectExec("UPDATE t SET n = n + 1").WillReturnError(errSerialization)
		m.ExpectRollback()
	}
	cfg := noDelay
	cfg.MaxAttempts = 3
	var events []resilience.Event
	cfg.Listener = func(e resilience.Event) { events = append(events, e) }
	err := mustRunner(t, cfg).RunInTx(context.Background(), db, nil, update)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "40001" || !dbclass.IsTxRetryable(err) {
		t.Fatalf("err = %v; want the last 40001", err)
	}
	if len(events) != 3 || events[2].Kind != resilience.EventGiveUp {
		t.Errorf("events %v; want two retries and a give-up", events)
	}
}

// TestRunInTxWaitsBetweenAttempts: the delay runs on the runner's clock, and
// the context ends the wait.
func TestRunInTxWaitsBetweenAttempts(t *testing.T) {
	db, m := newTxMock(t)
	m.ExpectBegin()
	m.ExpectExec("UPDATE t SET n = n + 1").WillReturnError(errSerialization)
	m.ExpectRollback()
	clk := clocktest.New(time.Unix(0, 0))
	r := mustRunner(t, TxConfig{Clock: clk, Delay: delay.Constants(time.Second)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.RunInTx(ctx, db, nil, update) }()
	if err := clk.WaitTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errSerialization) {
		t.Errorf("err = %v; want the context's error and the last attempt's", err)
	}
}

func TestRunInTxDoesNotCommitAfterTheContextEnded(t *testing.T) {
	db, m := newTxMock(t)
	m.ExpectBegin()
	m.ExpectRollback()
	ctx, cancel := context.WithCancel(context.Background())
	err := mustRunner(t, noDelay).RunInTx(ctx, db, nil, func(*sql.Tx) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTxOutcomeUnknown) {
		t.Errorf("err = %v; want context.Canceled, a known outcome", err)
	}
}

func TestRunInTxRollsBackOnPanic(t *testing.T) {
	db, m := newTxMock(t)
	m.ExpectBegin()
	m.ExpectRollback()
	defer func() {
		if recover() == nil {
			t.Error("the panic did not go on up")
		}
	}()
	_ = RunInTx(context.Background(), db, nil, func(*sql.Tx) error { panic("fn failed") })
}

func TestNewTxRunnerRefusesBadConfig(t *testing.T) {
	_, err := NewTxRunner(TxConfig{MaxAttempts: -1})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "MaxAttempts" {
		t.Errorf("NewTxRunner(MaxAttempts -1) = %v; want a *resilience.ConfigError naming MaxAttempts", err)
	}
}

// fakePgxTx is a pgx.Tx whose Exec fails as told and whose Commit returns
// commitErr.
type fakePgxTx struct {
	pgx.Tx
	execErr, commitErr error
	rolledBack         bool
}

func (tx *fakePgxTx) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, tx.execErr
}
func (tx *fakePgxTx) Commit(context.Context) error { return tx.commitErr }
func (tx *fakePgxTx) Rollback(context.Context) error {
	tx.rolledBack = true
	return nil
}

// fakePgxConn begins the transactions it is given, in order.
type fakePgxConn struct{ txs []*fakePgxTx }

func (c *fakePgxConn) BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error) {
	tx := c.txs[0]
	c.txs = c.txs[1:]
	return tx, nil
}

func TestRunInPgxTx(t *testing.T) {
	r := mustRunner(t, noDelay)
	exec := func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), "UPDATE t SET n = n + 1")
		return err
	}
	t.Run("retried", func(t *testing.T) {
		first, second := &fakePgxTx{execErr: errSerialization}, &fakePgxTx{}
		if err := r.RunInPgxTx(context.Background(), &fakePgxConn{txs: []*fakePgxTx{first, second}}, pgx.TxOptions{}, exec); err != nil {
			t.Fatal(err)
		}
		if !first.rolledBack || second.rolledBack {
			t.Errorf("rolled back: first %v, second %v; want the first only", first.rolledBack, second.rolledBack)
		}
	})
	t.Run("commit rolled back", func(t *testing.T) {
		tx := &fakePgxTx{commitErr: pgx.ErrTxCommitRollback}
		err := r.RunInPgxTx(context.Background(), &fakePgxConn{txs: []*fakePgxTx{tx}}, pgx.TxOptions{}, exec)
		if !errors.Is(err, pgx.ErrTxCommitRollback) || errors.Is(err, ErrTxOutcomeUnknown) {
			t.Errorf("err = %v; want pgx.ErrTxCommitRollback, a known outcome", err)
		}
	})
	t.Run("commit lost", func(t *testing.T) {
		tx := &fakePgxTx{commitErr: fmt.Errorf("commit: %w", pgconn.ErrConnClosed)}
		checkUnknown(t, r.RunInPgxTx(context.Background(), &fakePgxConn{txs: []*fakePgxTx{tx}}, pgx.TxOptions{}, exec))
	})
}
