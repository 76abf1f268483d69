package respool

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

// txPreset is the retry of a transaction, whose values NewTxRunner's doc
// states. It stays unexported: a bare retry around a transaction, without
// RunInTx's commit rules, would be unsafe.
func txPreset() retry.Config[struct{}] {
	return retry.Config[struct{}]{
		Name:        "tx",
		MaxAttempts: 5,
		Delay: delay.Strategy{Kind: delay.Exponential, Initial: 10 * time.Millisecond,
			Multiplier: 2, Max: time.Second, Jitter: delay.Full},
		RetryOn: dbguard.IsTxRetryable,
	}
}

// TxRunner runs functions in transactions and runs a transaction again, as
// a whole, when the server rolled it back over a conflict with another
// one. Make one with NewTxRunner; it is safe for concurrent use. RunInTx
// and RunInPgxTx use one made from a zero retry.Config.
//
// A transaction is retried only when the server rolled it back: its error
// is in dbguard.ClassTxRetryable (PostgreSQL 40001 serialization_failure,
// 40P01 deadlock_detected, 55P03 lock_not_available; MySQL 1213 deadlock,
// 1205 lock wait timeout, ...), whether BEGIN, the function or COMMIT
// returned it; the function may wrap it (%w). Any other error ends the
// run: the function's own, a broken connection before COMMIT (the
// transaction did not commit), a server's refusal of COMMIT. When COMMIT
// may or may not have taken effect (the connection broke after COMMIT was
// sent, the context ended while it ran, 08007 transaction_resolution_unknown)
// the run ends with a *TxOutcomeUnknownError: the transaction is never run
// again, and the caller has to find out whether it committed.
type TxRunner struct {
	retry *retry.Retry[struct{}]
}

// NewTxRunner returns a TxRunner that retries transactions as c says, or a
// *resilience.ConfigError naming the field it cannot use. A zero field of
// c takes the transaction preset's value:
//   - Name "tx" (in events);
//   - MaxAttempts 5, the first included;
//   - Delay exponential from 10ms, doubling, capped at 1s, with full
//     jitter, so that two transactions that conflicted do not collide
//     again (a Delay whose Kind is delay.Default is the preset's whole
//     Strategy; any other is used as it is);
//   - RetryOn dbguard.IsTxRetryable.
//
// A RetryOn that is set narrows dbguard.IsTxRetryable, never widens it: a
// transaction is run again only when both accept its error (see TxRunner).
// RetryOnResult and MapResult must be nil: a committed transaction is
// never run again, and RunInTx returns the run's outcome as it is.
// MaxElapsed, RetryAfter, Clock and Listener are used as they are (nil
// Clock: the system clock; the Listener receives resilience.EventRetry and
// EventGiveUp).
func NewTxRunner(c retry.Config[struct{}]) (*TxRunner, error) {
	if err := resil.FirstError(
		resil.Check(c.RetryOnResult == nil, "retry", "RetryOnResult", "set",
			"nil: a TxRunner retries only a transaction the server rolled back"),
		resil.Check(c.MapResult == nil, "retry", "MapResult", "set",
			"nil: a TxRunner returns the transaction's outcome as it is"),
	); err != nil {
		return nil, err
	}
	p := txPreset()
	c.Name = cmp.Or(c.Name, p.Name)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, p.MaxAttempts)
	c.Delay = resil.DelayOr(c.Delay, p.Delay)
	if narrow := c.RetryOn; narrow != nil {
		c.RetryOn = func(err error) bool { return p.RetryOn(err) && narrow(err) }
	} else {
		c.RetryOn = p.RetryOn
	}
	r, err := retry.New(c)
	if err != nil {
		return nil, err
	}
	return &TxRunner{retry: r}, nil
}

var defaultTxRunner, _ = NewTxRunner(retry.Config[struct{}]{})

// ErrTxOutcomeUnknown is matched (errors.Is) by every *TxOutcomeUnknownError.
var ErrTxOutcomeUnknown = errors.New("respool: the transaction's outcome is unknown: COMMIT may or may not have taken effect")

// TxOutcomeUnknownError is a transaction whose COMMIT was sent but whose
// answer never came: the server may have committed it or not. It is never
// retried. errors.Is(err, ErrTxOutcomeUnknown) and errors.Is(err,
// dbguard.ErrAmbiguous) hold, and errors.As finds Err's chain.
type TxOutcomeUnknownError struct {
	Attempt int   // the attempt whose COMMIT's outcome is unknown, 1 for the first
	Err     error // COMMIT's error
}

func (e *TxOutcomeUnknownError) Error() string {
	return fmt.Sprintf("%v (attempt %d): %v", ErrTxOutcomeUnknown, e.Attempt, e.Err)
}

func (e *TxOutcomeUnknownError) Unwrap() []error {
	return []error{ErrTxOutcomeUnknown, dbguard.ErrAmbiguous, e.Err}
}

// SQLBeginner begins database/sql transactions: *sql.DB and *sql.Conn.
type SQLBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// PgxBeginner begins native pgx transactions: *pgx.Conn, *pgxpool.Pool
// and *pgxpool.Conn.
type PgxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// RunInTx runs fn in a database/sql transaction of db begun with opts, and
// commits it, with the transaction preset (see NewTxRunner); see
// TxRunner.RunInTx.
func RunInTx(ctx context.Context, db SQLBeginner, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	return defaultTxRunner.RunInTx(ctx, db, opts, fn)
}

// RunInPgxTx runs fn in a native pgx transaction of db begun with opts, and
// commits it, with the transaction preset (see NewTxRunner); see
// TxRunner.RunInPgxTx.
func RunInPgxTx(ctx context.Context, db PgxBeginner, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	return defaultTxRunner.RunInPgxTx(ctx, db, opts, fn)
}

// RunInTx runs fn in a transaction of db (a *sql.DB of any driver, or a
// *sql.Conn) begun with opts and commits it; when the server rolls it back
// over a conflict, it rolls back and runs the whole of it again, after the
// configured delay, up to the configured attempts (see TxRunner). fn must
// not commit or roll back tx, and should have no effect outside tx, since
// it may run more than once. fn's error is returned as it is; ctx ends the
// run (its error is returned, joined with the last attempt's) and every
// wait between attempts.
func (r *TxRunner) RunInTx(ctx context.Context, db SQLBeginner, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	return runTx(ctx, r, txSteps[*sql.Tx]{
		begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, opts) },
		commit:   func(tx *sql.Tx) error { return tx.Commit() },
		rollback: func(tx *sql.Tx) { _ = tx.Rollback() },
	}, fn)
}

// RunInPgxTx is RunInTx for native pgx: db is a *pgx.Conn, a
// *pgxpool.Pool or a *pgxpool.Conn, and fn gets a pgx.Tx, which must not
// be committed or rolled back by fn.
func (r *TxRunner) RunInPgxTx(ctx context.Context, db PgxBeginner, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	return runTx(ctx, r, txSteps[pgx.Tx]{
		begin:  func(ctx context.Context) (pgx.Tx, error) { return db.BeginTx(ctx, opts) },
		commit: func(tx pgx.Tx) error { return tx.Commit(ctx) },
		rollback: func(tx pgx.Tx) {
			// The transaction's context may have ended: roll back within a
			// bound of its own (a rollback that fails closes the connection).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			defer cancel()
			_ = tx.Rollback(rctx)
		},
	}, fn)
}

// rollbackTimeout bounds a pgx rollback after the transaction's context
// ended.
const rollbackTimeout = 5 * time.Second

// txSteps are one transaction API's begin, commit and rollback.
type txSteps[Tx any] struct {
	begin    func(ctx context.Context) (Tx, error)
	commit   func(tx Tx) error
	rollback func(tx Tx)
}

func runTx[Tx any](ctx context.Context, r *TxRunner, s txSteps[Tx], fn func(Tx) error) error {
	attempts := 0
	_, err := r.retry.Do(ctx, func(ctx context.Context) (struct{}, error) {
		attempts++
		return struct{}{}, attemptTx(ctx, s, fn, attempts)
	})
	if attempts > 1 && dbguard.IsTxRetryable(err) {
		return fmt.Errorf("respool: transaction rolled back by the server on each of %d attempts: %w", attempts, err)
	}
	return err
}

// attemptTx runs the transaction once. A panic of fn rolls it back and
// goes on up.
func attemptTx[Tx any](ctx context.Context, s txSteps[Tx], fn func(Tx) error, attempt int) (err error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	committing := false
	defer func() {
		if !committing {
			s.rollback(tx)
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // COMMIT was not sent: the deferred rollback ends it
	}
	committing = true
	err = s.commit(tx)
	if err != nil && !commitRefused(err) {
		return &TxOutcomeUnknownError{Attempt: attempt, Err: err}
	}
	return err
}

// commitRefused reports whether a failed COMMIT certainly did not commit:
// the server answered with an error that is not ambiguous (a conflict, a
// deferred constraint), the transaction had been aborted before (pgx's
// ErrTxCommitRollback) or ended (sql.ErrTxDone, pgx.ErrTxClosed), or
// nothing was sent (dbguard's NothingSent: driver.ErrBadConn, which
// go-sql-driver/mysql and respool return only then, or pgconn's safe
// errors; the server rolls back a transaction whose session ends).
// Anything else may have followed COMMIT to the server.
func commitRefused(err error) bool {
	v := dbguard.Classify(err)
	if v.Code != "" {
		return v.Class != dbguard.ClassAmbiguous
	}
	return v.NothingSent && v.Class != dbguard.ClassAmbiguous ||
		errors.Is(err, pgx.ErrTxCommitRollback) || errors.Is(err, sql.ErrTxDone) || errors.Is(err, pgx.ErrTxClosed)
}
