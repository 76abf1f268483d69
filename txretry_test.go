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
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
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
var noDelay = retry.Config[struct{}]{Delay: delay.Strategy{Kind: delay.None}}

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

func mustRunner(t *testing.T, cfg retry.Config[struct{}]) *TxRunner {
	t.Helper()
	r, err := NewTxRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// expectFailedAttempts expects n attempts whose update fails with err.
func expectFailedAttempts(m sqlmock.Sqlmock, n int, err error) {
	for range n {
		m.ExpectBegin()
		m.ExpectExec("UPDATE t SET n = n + 1").WillReturnError(err)
		m.ExpectRollback()
	}
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
		!errors.Is(err, dbguard.ErrAmbiguous) || dbguard.Classify(err).Class != dbguard.ClassAmbiguous {
		t.Errorf("err = %v (%v); want a *TxOutcomeUnknownError of attempt 1, ambiguous", err, dbguard.Classify(err))
	}
}

func TestRunInTxGivesUpAfterMaxAttempts(t *testing.T) {
	db, m := newTxMock(t)
	expectFailedAttempts(m, 3, errSerialization)
	cfg := noDelay
	cfg.MaxAttempts = 3
	var events []resilience.Event
	cfg.Listener = func(e resilience.Event) { events = append(events, e) }
	err := mustRunner(t, cfg).RunInTx(context.Background(), db, nil, update)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "40001" || !dbguard.IsTxRetryable(err) {
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
	r := mustRunner(t, retry.Config[struct{}]{Clock: clk, Delay: delay.Strategy{Kind: delay.Constant, Initial: time.Second}})
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

// TestRunInTxDoesNotCommitAfterTheContextEnded: the transaction is rolled
// back, not committed. database/sql may roll it back from its own
// goroutine (Tx.awaitDone, on the context's end) after RunInTx returned:
// the transaction runs on a *sql.Conn, whose Close waits until the
// transaction has let go of the connection (after its rollback), so the
// rollback has reached the mock when the expectations are checked.
func TestRunInTxDoesNotCommitAfterTheContextEnded(t *testing.T) {
	db, m := newTxMock(t)
	m.ExpectBegin()
	m.ExpectRollback()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = mustRunner(t, noDelay).RunInTx(ctx, conn, nil, func(*sql.Tx) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTxOutcomeUnknown) {
		t.Errorf("err = %v; want context.Canceled, a known outcome", err)
	}
	// ErrConnDone: database/sql's rollback discarded the connection, which
	// closed the Conn once the rollback had returned.
	if err := conn.Close(); err != nil && !errors.Is(err, sql.ErrConnDone) {
		t.Error(err)
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
	tests := []struct {
		name  string
		cfg   retry.Config[struct{}]
		field string
	}{
		{"MaxAttempts -1", retry.Config[struct{}]{MaxAttempts: -1}, "MaxAttempts"},
		// A TxRunner decides the outcome (RunInTx's commit rules): a hook
		// that retries a success or rewrites the outcome is refused.
		{"RetryOnResult set", retry.Config[struct{}]{RetryOnResult: func(struct{}) bool { return true }}, "RetryOnResult"},
		{"MapResult set", retry.Config[struct{}]{MapResult: func(v struct{}, _ error) (struct{}, error) { return v, nil }}, "MapResult"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewTxRunner(tc.cfg)
			var ce *resilience.ConfigError
			if r != nil || !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("NewTxRunner(%s) = %v, %v; want a *resilience.ConfigError naming %s", tc.name, r, err, tc.field)
			}
		})
	}
}

// TestTxRunnerRetryOnNarrows: a RetryOn of the caller's narrows
// dbguard.IsTxRetryable: a transaction runs again only when both accept
// its error. One that accepts everything does not make a constraint
// violation retryable; one that refuses 40001 stops the retry of a
// serialization failure.
func TestTxRunnerRetryOnNarrows(t *testing.T) {
	tests := []struct {
		name    string
		retryOn func(error) bool
		err     error // the first attempt's statement error
		runs    int   // fn's runs wanted
	}{
		{"everything accepted, 23505 not retried", func(error) bool { return true }, errUnique, 1},
		{"40001 refused, not retried", func(err error) bool { return !errors.Is(err, errSerialization) }, errSerialization, 1},
		{"40001 refused, MySQL's deadlock retried", func(err error) bool { return !errors.Is(err, errSerialization) }, errDeadlock, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, m := newTxMock(t)
			expectFailedAttempts(m, 1, tc.err)
			if tc.runs == 2 {
				m.ExpectBegin()
				m.ExpectExec("UPDATE t SET n = n + 1").WillReturnResult(sqlmock.NewResult(0, 1))
				m.ExpectCommit()
			}
			cfg := noDelay
			cfg.RetryOn = tc.retryOn
			runs := 0
			err := mustRunner(t, cfg).RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
				runs++
				return update(tx)
			})
			if runs != tc.runs {
				t.Fatalf("fn ran %d times (err %v); want %d", runs, err, tc.runs)
			}
			if tc.runs == 1 && !errors.Is(err, tc.err) {
				t.Errorf("err = %v; want %v", err, tc.err)
			}
			if tc.runs == 2 && err != nil {
				t.Errorf("err = %v; want the second attempt's success", err)
			}
		})
	}
}

// TestTxRunnerZeroFieldsTakeThePreset: a Config that sets only its
// Listener keeps the preset's 5 attempts and its "tx" name, and retries
// what dbguard.IsTxRetryable accepts.
func TestTxRunnerZeroFieldsTakeThePreset(t *testing.T) {
	db, m := newTxMock(t)
	expectFailedAttempts(m, 5, errSerialization)
	clk := clocktest.New(time.Unix(0, 0))
	var events []resilience.Event
	r := mustRunner(t, retry.Config[struct{}]{Clock: clk, Listener: func(e resilience.Event) { events = append(events, e) }})
	done := make(chan error, 1)
	go func() { done <- r.RunInTx(context.Background(), db, nil, update) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Four waits: move the clock to each timer once it is set, and no
	// further (a timer set while the clock moves may fire in the same
	// Advance).
	for range 4 {
		if err := clk.WaitTimers(ctx, 1); err != nil {
			t.Fatalf("waiting for the retry's timer: %v", err)
		}
		next, _ := clk.Next()
		clk.Advance(next.Sub(clk.Now()))
	}
	err := <-done
	if !errors.Is(err, errSerialization) || len(events) != 5 || events[4].Kind != resilience.EventGiveUp {
		t.Fatalf("err = %v, events %v; want four retries and a give-up after 5 attempts", err, events)
	}
	for _, e := range events {
		if e.Name != "tx" {
			t.Errorf("event %v named %q; want tx", e.Kind, e.Name)
		}
		// Full jitter under 10ms doubling to 1s: the n-th wait is at most 10ms·2^(n-1).
		if limit := 10 * time.Millisecond << (e.Attempt - 1); e.Kind == resilience.EventRetry && (e.Delay < 0 || e.Delay > limit) {
			t.Errorf("retry %d waits %v; want within [0, %v]", e.Attempt, e.Delay, limit)
		}
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
