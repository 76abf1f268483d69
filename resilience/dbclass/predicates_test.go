package dbclass_test

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/resilience/dbclass"
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
		{"too many connections", pgErr("53300"), false, true, false, dbclass.DefaultPause},
		{"starting up", pgErr("57P03"), false, true, false, dbclass.DefaultStartupPause},
		{"mysql too many connections", &mysql.MySQLError{Number: 1040}, false, true, false, dbclass.DefaultPause},
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
			if got := dbclass.IsFailure(tc.err); got != tc.failure {
				t.Errorf("IsFailure = %v, want %v", got, tc.failure)
			}
			if got := dbclass.IsConnectRetryable(tc.err); got != tc.connectRetry {
				t.Errorf("IsConnectRetryable = %v, want %v", got, tc.connectRetry)
			}
			if got := dbclass.IsTxRetryable(tc.err); got != tc.txRe {
				t.Errorf("IsTxRetryable = %v, want %v", got, tc.txRe)
			}
			d, ok := dbclass.BackPressure(tc.err)
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
	if got, want := dbclass.ClassifyContext(canceledContext(), canceled), (dbclass.Classification{Class: dbclass.ClassCaller, Code: "57014", Canceled: true}); got != want {
		t.Errorf("after cancel: %v, want %v", got, want)
	}
	if got, want := dbclass.ClassifyContext(expiredContext(), canceled), (dbclass.Classification{Class: dbclass.ClassOther, Code: "57014", Timeout: true}); got != want {
		t.Errorf("after deadline: %v, want %v", got, want)
	}
	if got, want := dbclass.ClassifyContext(context.Background(), canceled), (dbclass.Classification{Class: dbclass.ClassOther, Code: "57014", Timeout: true}); got != want {
		t.Errorf("live context: %v, want %v", got, want)
	}
	interrupted := &mysql.MySQLError{Number: 1317, Message: "Query execution was interrupted"}
	if got := dbclass.ClassifyContext(canceledContext(), interrupted); got.Class != dbclass.ClassCaller || !got.Canceled {
		t.Errorf("mysql 1317 after cancel: %v, want caller canceled", got)
	}
	// A server's verdict on the statement wins over the context.
	if got := dbclass.ClassifyContext(canceledContext(), pgErr("40001")); got.Class != dbclass.ClassTxRetryable {
		t.Errorf("40001 after cancel: %v, want tx-retryable", got)
	}
	// A transport error after the deadline is the deadline's doing.
	if got, want := dbclass.ClassifyContext(expiredContext(), io.ErrUnexpectedEOF), (dbclass.Classification{Class: dbclass.ClassAmbiguous, Timeout: true}); got != want {
		t.Errorf("EOF after deadline: %v, want %v", got, want)
	}
	if got := dbclass.ClassifyContext(canceledContext(), nil); got != (dbclass.Classification{}) {
		t.Errorf("nil error: %v, want the zero verdict", got)
	}
}

func TestConfig(t *testing.T) {
	c, err := dbclass.New(dbclass.Config{Pause: 3 * time.Second, StartupPause: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want time.Duration
	}{
		{pgErr("53300"), 3 * time.Second},
		{pgErr("53400"), 3 * time.Second},
		{&mysql.MySQLError{Number: 1203}, 3 * time.Second},
		{pgErr("57P03"), 250 * time.Millisecond},
	} {
		if d, ok := c.BackPressure(tc.err); !ok || d != tc.want {
			t.Errorf("BackPressure(%v) = %v, %v; want %v, true", tc.err, d, ok, tc.want)
		}
		if got := c.Classify(tc.err).Pause; got != tc.want {
			t.Errorf("Classify(%v).Pause = %v, want %v", tc.err, got, tc.want)
		}
	}
	if got := c.ClassifyContext(canceledContext(), pgErr("53300")).Pause; got != 3*time.Second {
		t.Errorf("ClassifyContext pause = %v, want 3s", got)
	}

	zero, err := dbclass.New(dbclass.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := zero.BackPressure(pgErr("53300")); d != dbclass.DefaultPause {
		t.Errorf("zero Config pause = %v, want %v", d, dbclass.DefaultPause)
	}
	if d, _ := zero.BackPressure(pgErr("57P03")); d != dbclass.DefaultStartupPause {
		t.Errorf("zero Config startup pause = %v, want %v", d, dbclass.DefaultStartupPause)
	}

	for _, cfg := range []dbclass.Config{{Pause: -time.Second}, {StartupPause: -time.Millisecond}} {
		_, err := dbclass.New(cfg)
		if !errors.Is(err, dbclass.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
			continue
		}
		if !strings.Contains(err.Error(), "Pause -1") {
			t.Errorf("New(%+v) error %q does not name the field and value", cfg, err)
		}
	}
}

func TestMarkAmbiguous(t *testing.T) {
	lost := fmt.Errorf("commit: %w", io.ErrUnexpectedEOF)
	marked := dbclass.MarkAmbiguous(lost)
	if !errors.Is(marked, dbclass.ErrAmbiguous) || !errors.Is(marked, io.ErrUnexpectedEOF) {
		t.Fatalf("MarkAmbiguous(%v) = %v: want both ErrAmbiguous and the cause in the chain", lost, marked)
	}
	if again := dbclass.MarkAmbiguous(marked); again != marked {
		t.Errorf("MarkAmbiguous marked twice: %v", again)
	}
	syntax := pgErr("42601")
	if got := dbclass.MarkAmbiguous(syntax); got != syntax {
		t.Errorf("MarkAmbiguous(syntax error) = %v, want it unchanged", got)
	}
	if dbclass.MarkAmbiguous(nil) != nil {
		t.Error("MarkAmbiguous(nil) != nil")
	}
}

// TestErrAmbiguousInTheChain: an error that says it is ambiguous (a
// driver's wrapper that knows its statement was sent, though the cause
// alone reads as nothing sent) is classified so, unless the caller
// cancelled.
func TestErrAmbiguousInTheChain(t *testing.T) {
	sent := fmt.Errorf("%w: the driver reported %w after sending", dbclass.ErrAmbiguous, driver.ErrBadConn)
	v := dbclass.Classify(sent)
	if v.Class != dbclass.ClassAmbiguous || v.NothingSent || v.IsConnectRetryable() || !v.IsFailure() {
		t.Errorf("Classify(%v) = %v; want ambiguous, not nothing-sent, a failure", sent, v)
	}
	canceled := fmt.Errorf("%w: %w", dbclass.ErrAmbiguous, context.Canceled)
	if v := dbclass.Classify(canceled); v.Class != dbclass.ClassCaller || !v.Canceled {
		t.Errorf("Classify(%v) = %v; want the caller's cancellation", canceled, v)
	}
}

func TestStringAndLogValue(t *testing.T) {
	v := dbclass.Classify(pgErr("53300"))
	if got, want := v.String(), "back-pressure code=53300 nothing-sent pause=1s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})).Info("create failed", "err", v)
	if got, want := buf.String(), "level=INFO msg=\"create failed\" err.class=back-pressure err.code=53300 err.nothing_sent=true err.pause=1s\n"; got != want {
		t.Errorf("log line = %q, want %q", got, want)
	}
	for c, want := range map[dbclass.Class]string{
		dbclass.ClassNone: "none", dbclass.ClassOther: "other", dbclass.ClassBackPressure: "back-pressure",
		dbclass.ClassConnection: "connection", dbclass.ClassTxRetryable: "tx-retryable",
		dbclass.ClassAmbiguous: "ambiguous", dbclass.ClassCaller: "caller", dbclass.Class(42): "Class(42)",
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
			if got, want := dbclass.ClassifyContext(ctx, err), dbclass.Classify(err); got != want {
				t.Errorf("ClassifyContext(%v, %v) = %v, want %v as without the context", ctx.Err(), err, got, want)
			}
		}
	}
	if got := dbclass.ClassifyContext(canceledContext(), io.ErrUnexpectedEOF); got.Class != dbclass.ClassCaller || !got.Canceled {
		t.Errorf("EOF after cancel: %v, want caller canceled", got)
	}
}
