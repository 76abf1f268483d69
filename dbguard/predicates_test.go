package dbguard_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
)

func pgErr(code string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "message " + code}
}

// TestPredicates checks what each mechanism does with each kind of error:
// the breaker counts connection-level errors, ambiguous outcomes and
// timeouts; a connection attempt is retried only when nothing reached the
// server; a transaction is retried only on the transaction-retryable class.
func TestPredicates(t *testing.T) {
	cases := []struct {
		name                        string
		err                         error
		failure, connectRetry, txRe bool
		pause                       time.Duration
	}{
		{"nil", nil, false, false, false, 0},
		{"too many connections", pgErr("53300"), false, true, false, time.Second},
		{"starting up", pgErr("57P03"), false, true, false, 100 * time.Millisecond},
		{"mysql too many connections", &mysql.MySQLError{Number: 1040}, false, true, false, time.Second},
		{"dial refused", &netDialError, true, true, false, 0},
		{"bad connection", fmt.Errorf("exec: %w", errBadConn), true, true, false, 0},
		{"backend terminated", pgErr("57P01"), true, false, false, 0},
		{"connection lost after sending", io.ErrUnexpectedEOF, true, false, false, 0},
		{"transaction resolution unknown", pgErr("08007"), true, false, false, 0},
		{"statement deadline", context.DeadlineExceeded, true, false, false, 0},
		{"statement_timeout", pgErr("57014"), true, false, false, 0},
		{"serialization failure", pgErr("40001"), false, false, true, 0},
		{"mysql deadlock", &mysql.MySQLError{Number: 1213}, false, false, true, 0},
		{"mysql lock wait timeout", &mysql.MySQLError{Number: 1205}, false, false, true, 0},
		{"syntax error", pgErr("42601"), false, false, false, 0},
		{"unique violation", &mysql.MySQLError{Number: 1062}, false, false, false, 0},
		{"cancelled", context.Canceled, false, false, false, 0},
		{"unknown", errors.New("boom"), false, false, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := dbguard.Classify(tc.err).IsFailure(); got != tc.failure {
				t.Errorf("IsFailure = %v, want %v", got, tc.failure)
			}
			if got := dbguard.Classify(tc.err).IsConnectRetryable(); got != tc.connectRetry {
				t.Errorf("IsConnectRetryable = %v, want %v", got, tc.connectRetry)
			}
			if got := dbguard.IsTxRetryable(tc.err); got != tc.txRe {
				t.Errorf("IsTxRetryable = %v, want %v", got, tc.txRe)
			}
			d, ok := dbguard.BackPressure(tc.err)
			if ok != (tc.pause > 0) || d != tc.pause {
				t.Errorf("BackPressure = %v, %v; want %v, %v", d, ok, tc.pause, tc.pause > 0)
			}
		})
	}
}

// TestClassifyContext: with pgx's CancelRequestContextWatcherHandler the
// server answers a cancelled context with 57014, as it answers its own
// statement_timeout; only the context tells them apart.
func TestClassifyContext(t *testing.T) {
	canceled := pgErr("57014")
	if got, want := dbguard.ClassifyContext(canceledContext(), canceled), (dbguard.Classification{Class: dbguard.ClassCaller, Code: "57014", Canceled: true}); got != want {
		t.Errorf("after cancel: %v, want %v", got, want)
	}
	if got, want := dbguard.ClassifyContext(expiredContext(), canceled), (dbguard.Classification{Class: dbguard.ClassOther, Code: "57014", Timeout: true}); got != want {
		t.Errorf("after deadline: %v, want %v", got, want)
	}
	if got, want := dbguard.ClassifyContext(context.Background(), canceled), (dbguard.Classification{Class: dbguard.ClassOther, Code: "57014", Timeout: true}); got != want {
		t.Errorf("live context: %v, want %v", got, want)
	}
	interrupted := &mysql.MySQLError{Number: 1317, Message: "Query execution was interrupted"}
	if got := dbguard.ClassifyContext(canceledContext(), interrupted); got.Class != dbguard.ClassCaller || !got.Canceled {
		t.Errorf("mysql 1317 after cancel: %v, want caller canceled", got)
	}
	// A server's verdict on the statement wins over the context.
	if got := dbguard.ClassifyContext(canceledContext(), pgErr("40001")); got.Class != dbguard.ClassTxRetryable {
		t.Errorf("40001 after cancel: %v, want tx-retryable", got)
	}
	// A transport error after the deadline is the deadline's doing.
	if got, want := dbguard.ClassifyContext(expiredContext(), io.ErrUnexpectedEOF), (dbguard.Classification{Class: dbguard.ClassAmbiguous, Timeout: true}); got != want {
		t.Errorf("EOF after deadline: %v, want %v", got, want)
	}
	if got := dbguard.ClassifyContext(canceledContext(), nil); got != (dbguard.Classification{}) {
		t.Errorf("nil error: %v, want the zero verdict", got)
	}
}

// TestBackPressurePauses: the pauses are fixed, 1s for a full server and
// 100ms for one starting, whatever the path to the verdict.
func TestBackPressurePauses(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want time.Duration
	}{
		{pgErr("53300"), time.Second},
		{pgErr("53400"), time.Second},
		{&mysql.MySQLError{Number: 1203}, time.Second},
		{pgErr("57P03"), 100 * time.Millisecond},
	} {
		if d, ok := dbguard.BackPressure(tc.err); !ok || d != tc.want {
			t.Errorf("BackPressure(%v) = %v, %v; want %v, true", tc.err, d, ok, tc.want)
		}
		if got := dbguard.ClassifyContext(canceledContext(), tc.err).Pause; got != tc.want {
			t.Errorf("ClassifyContext(%v).Pause = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestErrAmbiguousInTheChain: an error that says it is ambiguous (a
// driver's wrapper that knows its statement was sent, though the cause
// alone reads as nothing sent) is classified so, unless the caller
// cancelled.
func TestErrAmbiguousInTheChain(t *testing.T) {
	sent := fmt.Errorf("%w: the driver reported %w after sending", dbguard.ErrAmbiguous, driver.ErrBadConn)
	v := dbguard.Classify(sent)
	if v.Class != dbguard.ClassAmbiguous || v.NothingSent || v.IsConnectRetryable() || !v.IsFailure() {
		t.Errorf("Classify(%v) = %v; want ambiguous, not nothing-sent, a failure", sent, v)
	}
	canceled := fmt.Errorf("%w: %w", dbguard.ErrAmbiguous, context.Canceled)
	if v := dbguard.Classify(canceled); v.Class != dbguard.ClassCaller || !v.Canceled {
		t.Errorf("Classify(%v) = %v; want the caller's cancellation", canceled, v)
	}
}

func TestString(t *testing.T) {
	v := dbguard.Classify(pgErr("53300"))
	if got, want := v.String(), "back-pressure code=53300 nothing-sent pause=1s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	for c, want := range map[dbguard.Class]string{
		dbguard.ClassNone: "none", dbguard.ClassOther: "other", dbguard.ClassBackPressure: "back-pressure",
		dbguard.ClassConnection: "connection", dbguard.ClassTxRetryable: "tx-retryable",
		dbguard.ClassAmbiguous: "ambiguous", dbguard.ClassCaller: "caller", dbguard.ClassReadOnly: "read-only", dbguard.Class(42): "Class(42)",
	} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q, want %q", c, got, want)
		}
	}
}

// TestClassifyContextLeavesOtherErrors: an ended context explains a lost
// connection or a stopped statement, not an unrelated error.
func TestClassifyContextLeavesOtherErrors(t *testing.T) {
	for _, ctx := range []context.Context{canceledContext(), expiredContext()} {
		for _, err := range []error{errors.New("order total is negative"), pgErr("23505"), driver.ErrBadConn} {
			if got, want := dbguard.ClassifyContext(ctx, err), dbguard.Classify(err); got != want {
				t.Errorf("ClassifyContext(%v, %v) = %v, want %v as without the context", ctx.Err(), err, got, want)
			}
		}
	}
	if got := dbguard.ClassifyContext(canceledContext(), io.ErrUnexpectedEOF); got.Class != dbguard.ClassCaller || !got.Canceled {
		t.Errorf("EOF after cancel: %v, want caller canceled", got)
	}
}
