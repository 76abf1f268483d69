package respool

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/dbguard"
)

// TestStatementErrBadConn: a driver.ErrBadConn reaches database/sql (which
// then runs the statement on another connection) only when nothing can
// have been sent. integration/dbclass shows it on real servers with a
// proxy that cuts the connection after the statement.
func TestStatementErrBadConn(t *testing.T) {
	w := openWire(t)
	refusing := openWire(t) // go-sql-driver/mysql with rejectReadOnly=true
	refusing.proto.refusedBadConn = mysqlRefusals(&mysql.Config{RejectReadOnly: true}).refusedBadConn
	multi := openWire(t) // and multiStatements
	multi.proto.refusedBadConn = mysqlRefusals(&mysql.Config{RejectReadOnly: true, MultiStatements: true}).refusedBadConn
	pgxConn := &stdlib.Conn{}
	tests := []struct {
		name   string
		pc     *physConn
		send   bool // the statement wrote to the socket
		err    error
		unsent bool // want driver.ErrBadConn through, else ErrStatementLost
	}{
		{"watched socket, nothing written", &physConn{wire: w}, false, sqldriver.ErrBadConn, true},
		{"watched socket, written", &physConn{wire: w}, true, sqldriver.ErrBadConn, false},
		{"watched socket, written, wrapped", &physConn{wire: w}, true, fmt.Errorf("x: %w", sqldriver.ErrBadConn), false},
		{"watched socket, written, refused as read-only", &physConn{wire: refusing}, true, sqldriver.ErrBadConn, true},
		{"watched socket, written, refused after statements that may have run", &physConn{wire: multi}, true, sqldriver.ErrBadConn, false},
		{"unwatched pgx stdlib", &physConn{Conn: pgxConn}, false, sqldriver.ErrBadConn, false},
		{"unwatched other driver (trusted)", &physConn{Conn: &faultConn{}}, false, sqldriver.ErrBadConn, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mark := tc.pc.sentMark()
			if tc.send {
				if _, err := tc.pc.wire.Write([]byte("UPDATE")); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.pc.statementErr(context.Background(), mark, tc.err)
			if tc.unsent {
				if err != tc.err {
					t.Errorf("err = %v; want %v unchanged", err, tc.err)
				}
				return
			}
			v := dbguard.Classify(err)
			if err != ErrStatementLost || errors.Is(err, sqldriver.ErrBadConn) || !errors.Is(err, dbguard.ErrAmbiguous) ||
				v.Class != dbguard.ClassAmbiguous || v.IsConnectRetryable() || !isBadConn(err) {
				t.Errorf("err = %v (%v); want ErrStatementLost: ambiguous, not driver.ErrBadConn, the connection dropped", err, v)
			}
		})
	}
	// A statement lost after its context ended (pgx gives the connection up
	// when its cancel request goes unanswered) matches the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	pc := &physConn{wire: w}
	mark := pc.sentMark()
	if _, err := w.Write([]byte("UPDATE")); err != nil {
		t.Fatal(err)
	}
	err := pc.statementErr(ctx, mark, sqldriver.ErrBadConn)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrStatementLost) ||
		errors.Is(err, sqldriver.ErrBadConn) || !isBadConn(err) || dbguard.Classify(err).Class != dbguard.ClassAmbiguous {
		t.Errorf("lost after the deadline: err = %v (%v); want the deadline's and ErrStatementLost, ambiguous", err, dbguard.Classify(err))
	}
	if err := (&physConn{}).statementErr(context.Background(), 0, nil); err != nil {
		t.Errorf("statementErr(nil) = %v", err)
	}
}

func TestContextStopped(t *testing.T) {
	canceled := &pgconn.PgError{Severity: "ERROR", Code: "57014", Message: "canceling statement due to user request"}
	other := &pgconn.PgError{Severity: "ERROR", Code: "23505"}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()

	for _, ctx := range []context.Context{ended, expired} {
		err := contextStopped(ctx, canceled)
		var pgErr *pgconn.PgError
		if !errors.Is(err, ctx.Err()) || !errors.As(err, &pgErr) || pgErr.Code != "57014" {
			t.Errorf("contextStopped(%v, 57014) = %v; want both the context's error and the server's", ctx.Err(), err)
		}
	}
	// As pgx's driver, a pgx statement its deadline ended is a
	// pgconn.Timeout, and a cancelled one is not.
	pc, err := pgconn.ParseConfig("host=127.0.0.1 port=1 user=u password=p sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	setPgTimeout(pc)
	if err := contextStopped(expired, canceled); !pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		!strings.HasPrefix(err.Error(), "timeout: context deadline exceeded: ERROR: canceling statement") {
		t.Errorf("contextStopped(deadline, 57014) = %v: pgconn.Timeout %v, SafeToRetry %v; want a timeout, not safe to retry",
			err, pgconn.Timeout(err), pgconn.SafeToRetry(err))
	}
	if err := contextStopped(ended, canceled); pgconn.Timeout(err) {
		t.Errorf("contextStopped(cancelled, 57014) = %v: a timeout", err)
	}
	unchanged := []struct {
		ctx context.Context
		err error
	}{
		{context.Background(), canceled}, // a statement_timeout: the context did not end
		{ended, other},
		{ended, context.Canceled},
		{ended, nil},
	}
	for _, tc := range unchanged {
		if got := contextStopped(tc.ctx, tc.err); got != tc.err {
			t.Errorf("contextStopped(%v, %v) = %v; want it unchanged", tc.ctx.Err(), tc.err, got)
		}
	}
}

// sendingTx is a real driver's transaction whose Commit and Rollback send
// on the wire, then fail with err.
type sendingTx struct {
	w   *wireConn
	err error
}

func (t sendingTx) Commit() error   { return t.send("COMMIT") }
func (t sendingTx) Rollback() error { return t.send("ROLLBACK") }
func (t sendingTx) send(q string) error {
	_, _ = t.w.Write([]byte(q))
	return t.err
}

// TestTxEndErrBadConn: a COMMIT whose connection broke after it was sent is
// ErrStatementLost, not driver.ErrBadConn, which RunInTx would take for a
// transaction that certainly did not commit; the connection is not reused.
func TestTxEndErrBadConn(t *testing.T) {
	w := openWire(t)
	c := &conn{pc: &physConn{wire: w}}
	for _, end := range []func(tx) error{tx.Commit, tx.Rollback} {
		c.broken = false
		err := end(tx{c: c, inner: sendingTx{w: w, err: sqldriver.ErrBadConn}})
		if !errors.Is(err, ErrStatementLost) || errors.Is(err, sqldriver.ErrBadConn) || !c.broken {
			t.Errorf("err = %v, broken %v; want ErrStatementLost and the connection dropped", err, c.broken)
		}
	}
}

// openWire returns an adopted wire to a fake server, ended with the test.
func openWire(t *testing.T) *wireConn {
	t.Helper()
	s := startFakeServer(t)
	w := dialWire(t, s, time.Minute)
	t.Cleanup(func() {
		close(s.release)
		_ = w.Close()
		w.awaitSessionEnd()
	})
	return w
}
