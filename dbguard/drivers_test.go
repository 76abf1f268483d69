package dbguard_test

import (
	"context"
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/testctx"
)

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func expiredContext() context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	_ = cancel // expired already: nothing to release early
	return ctx
}

// want abbreviates an expected verdict.
func want(class dbguard.Class, bits ...string) dbguard.Classification {
	v := dbguard.Classification{Class: class}
	for _, b := range bits {
		switch b {
		case "sent0":
			v.NothingSent = true
		case "timeout":
			v.Timeout = true
		case "canceled":
			v.Canceled = true
		case "auth":
			v.Auth = true
		default:
			panic("unknown bit " + b)
		}
	}
	return v
}

func withCode(v dbguard.Classification, code string, pause time.Duration) dbguard.Classification {
	v.Code, v.Pause = code, pause
	return v
}

// driverCase makes an error the way a driver does and states its verdict.
type driverCase struct {
	name string
	err  func(t *testing.T) error
	want dbguard.Classification
}

func TestPgconnErrors(t *testing.T) {
	cases := []driverCase{
		{"dial refused", func(t *testing.T) error {
			_, err := pgConnect(context.Background(), closedPort(t))
			return err
		}, want(dbguard.ClassConnection, "sent0")},
		{"dial with an expired deadline", func(t *testing.T) error {
			_, err := pgConnect(expiredContext(), closedPort(t))
			return err
		}, want(dbguard.ClassConnection, "sent0", "timeout")},
		{"dial with a cancelled context", func(t *testing.T) error {
			_, err := pgConnect(canceledContext(), closedPort(t))
			return err
		}, want(dbguard.ClassCaller, "sent0", "canceled")},
		{"startup refused: too many connections", func(t *testing.T) error {
			_, err := pgConnect(context.Background(), serveLoopback(t, pgRefuseStartup("53300", "sorry, too many clients already")))
			return err
		}, withCode(want(dbguard.ClassBackPressure, "sent0"), "53300", full)},
		{"startup refused: starting up", func(t *testing.T) error {
			_, err := pgConnect(context.Background(), serveLoopback(t, pgRefuseStartup("57P03", "the database system is starting up")))
			return err
		}, withCode(want(dbguard.ClassBackPressure, "sent0"), "57P03", startup)},
		{"startup refused: wrong password", func(t *testing.T) error {
			_, err := pgConnect(context.Background(), serveLoopback(t, pgRefuseStartup("28P01", `password authentication failed for user "respool"`)))
			return err
		}, withCode(want(dbguard.ClassCaller, "sent0", "auth"), "28P01", 0)},
		{"startup refused: no such database", func(t *testing.T) error {
			_, err := pgConnect(context.Background(), serveLoopback(t, pgRefuseStartup("3D000", `database "respool" does not exist`)))
			return err
		}, withCode(want(dbguard.ClassCaller, "sent0"), "3D000", 0)},
		{"server closed the connection during startup", func(t *testing.T) error {
			_, err := pgConnect(context.Background(), serveLoopback(t, func(net.Conn) {}))
			return err
		}, want(dbguard.ClassConnection, "sent0")},
		{"serialization failure", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(pgError("ERROR", "40001", "could not serialize access"))))
			_, err := conn.Exec(context.Background(), "COMMIT").ReadAll()
			return err
		}, withCode(want(dbguard.ClassTxRetryable), "40001", 0)},
		{"backend terminated", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(pgError("FATAL", "57P01", "terminating connection due to administrator command"))))
			_, err := conn.Exec(context.Background(), "SELECT 1").ReadAll()
			return err
		}, withCode(want(dbguard.ClassConnection), "57P01", 0)},
		// pgconn reports this "conn closed", which pgconn.SafeToRetry calls
		// safe: a retry would run the statement twice.
		{"connection lost after a simple-protocol statement was sent", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(func(*pgproto3.Backend, string) bool { return false })))
			_, err := conn.Exec(context.Background(), "UPDATE accounts SET n = n + 1").ReadAll()
			if !pgconn.SafeToRetry(err) || !errors.Is(err, pgconn.ErrConnClosed) {
				t.Logf("pgconn no longer reports a lost simple-protocol statement as a safe %q: %v", pgconn.ErrConnClosed, err)
			}
			return err
		}, want(dbguard.ClassAmbiguous)},
		{"connection lost after an extended-protocol statement was sent", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(nil)))
			return conn.ExecParams(context.Background(), "UPDATE accounts SET n = n + $1", [][]byte{[]byte("1")}, nil, nil, nil).Read().Err
		}, want(dbguard.ClassAmbiguous)},
		{"statement on a connection closed before it", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(pgError("ERROR", "42601", "syntax error"))))
			conn.Close(context.Background())
			_, err := conn.Exec(context.Background(), "SELECT 1").ReadAll()
			return err
		}, want(dbguard.ClassAmbiguous)}, // the same error as above: the doubt wins
		{"context cancelled before the statement", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(pgError("ERROR", "42601", "syntax error"))))
			_, err := conn.Exec(canceledContext(), "SELECT 1").ReadAll()
			return err
		}, want(dbguard.ClassCaller, "sent0", "canceled")},
		{"deadline passed before the statement", func(t *testing.T) error {
			conn := pgMustConnect(t, serveLoopback(t, pgSession(pgError("ERROR", "42601", "syntax error"))))
			_, err := conn.Exec(expiredContext(), "SELECT 1").ReadAll()
			return err
		}, want(dbguard.ClassOther, "sent0", "timeout")},
		{"context cancelled under a running statement", func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			conn := pgMustConnect(t, serveLoopback(t, pgSession(func(*pgproto3.Backend, string) bool {
				cancel() // the statement has reached the server
				return true
			})))
			_, err := conn.Exec(ctx, "SELECT pg_sleep(60)").ReadAll()
			return err
		}, want(dbguard.ClassCaller, "canceled")},
		{"deadline passed under a running statement", func(t *testing.T) error {
			ctx := testctx.NewDeadline(context.Background())
			conn := pgMustConnect(t, serveLoopback(t, pgSession(func(*pgproto3.Backend, string) bool {
				ctx.Expire() // the statement has reached the server
				return true
			})))
			_, err := conn.Exec(ctx, "UPDATE accounts SET n = n + 1").ReadAll()
			return err
		}, want(dbguard.ClassAmbiguous, "timeout")},
		{"unparsable connection string", func(t *testing.T) error {
			_, err := pgconn.ParseConfig("postgres://respool:secret@db:notaport/respool")
			return err
		}, want(dbguard.ClassCaller)},
	}
	runDriverCases(t, cases)
}

func TestMySQLDriverErrors(t *testing.T) {
	cases := []driverCase{
		{"dial refused", func(t *testing.T) error {
			return mysqlConnect(context.Background(), closedPort(t))
		}, want(dbguard.ClassConnection, "sent0")},
		{"dial with a cancelled context", func(t *testing.T) error {
			return mysqlConnect(canceledContext(), closedPort(t))
		}, want(dbguard.ClassCaller, "sent0", "canceled")},
		{"handshake refused: too many connections", func(t *testing.T) error {
			return mysqlConnect(context.Background(), serveLoopback(t, mysqlRefuseHandshake(1040, "Too many connections")))
		}, withCode(want(dbguard.ClassBackPressure, "sent0"), "1040", full)},
		{"invalid connection (a read failed after the statement was written)", func(*testing.T) error {
			return mysql.ErrInvalidConn
		}, want(dbguard.ClassAmbiguous)},
		{"malformed packet", func(*testing.T) error { return mysql.ErrMalformPkt }, want(dbguard.ClassAmbiguous)},
		{"statement above max_allowed_packet, refused before sending", func(*testing.T) error { return mysql.ErrPktTooLarge }, want(dbguard.ClassCaller)},
		{"TLS required but not offered", func(*testing.T) error { return mysql.ErrNoTLS }, want(dbguard.ClassCaller)},
	}
	runDriverCases(t, cases)
}

func TestTransportAndStdlibErrors(t *testing.T) {
	cases := []driverCase{
		{"nil", func(*testing.T) error { return nil }, dbguard.Classification{}},
		{"driver.ErrBadConn", func(*testing.T) error { return driver.ErrBadConn }, want(dbguard.ClassConnection, "sent0")},
		{"sql.ErrNoRows", func(*testing.T) error { return sql.ErrNoRows }, want(dbguard.ClassCaller)},
		{"sql.ErrTxDone", func(*testing.T) error { return sql.ErrTxDone }, want(dbguard.ClassCaller)},
		{"sql.ErrConnDone", func(*testing.T) error { return sql.ErrConnDone }, want(dbguard.ClassCaller)},
		{"context.Canceled", func(*testing.T) error { return context.Canceled }, want(dbguard.ClassCaller, "canceled")},
		// database/sql and go-sql-driver/mysql return the bare context error
		// both before and after sending: the outcome is unknown.
		{"context.DeadlineExceeded", func(*testing.T) error { return context.DeadlineExceeded }, want(dbguard.ClassAmbiguous, "timeout")},
		{"net dial refused", func(t *testing.T) error {
			_, err := net.Dial("tcp", closedPort(t))
			return err
		}, want(dbguard.ClassConnection, "sent0")},
		{"net dial timeout", func(t *testing.T) error {
			var d net.Dialer
			_, err := d.DialContext(expiredContext(), "tcp", closedPort(t))
			return err
		}, want(dbguard.ClassConnection, "sent0", "timeout")},
		{"DNS error", func(*testing.T) error {
			return &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "db.invalid", IsNotFound: true}}
		}, want(dbguard.ClassConnection, "sent0")},
		{"bare ECONNREFUSED from a custom dialer", func(*testing.T) error { return syscall.ECONNREFUSED }, want(dbguard.ClassConnection, "sent0")},
		{"connection reset while reading", func(t *testing.T) error {
			return readAfterReset(t)
		}, want(dbguard.ClassAmbiguous)},
		{"broken pipe while writing", func(*testing.T) error {
			return &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
		}, want(dbguard.ClassAmbiguous)},
		{"read timeout", func(*testing.T) error {
			return &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
		}, want(dbguard.ClassAmbiguous, "timeout")},
		{"unexpected EOF", func(*testing.T) error { return io.ErrUnexpectedEOF }, want(dbguard.ClassAmbiguous)},
		{"unknown certificate authority", func(*testing.T) error {
			return fmt.Errorf("tls error: %w", x509.UnknownAuthorityError{})
		}, want(dbguard.ClassCaller)},
		{"wrapping ErrAmbiguous", func(*testing.T) error {
			return fmt.Errorf("%w: %w", dbguard.ErrAmbiguous, io.ErrUnexpectedEOF)
		}, want(dbguard.ClassAmbiguous)},
		{"an application error", func(*testing.T) error { return errors.New("order total is negative") }, want(dbguard.ClassOther)},
	}
	runDriverCases(t, cases)
}

func runDriverCases(t *testing.T, cases []driverCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			driverErr := tc.err(t)
			if driverErr == nil && tc.want.Class != dbguard.ClassNone {
				t.Fatal("the driver returned no error")
			}
			for _, w := range wrappings {
				err := driverErr
				if err != nil {
					err = w.wrap(err)
				}
				if got := dbguard.Classify(err); got != tc.want {
					t.Errorf("Classify(%s %q) = %v, want %v", w.name, err, got, tc.want)
				}
			}
		})
	}
}

// readAfterReset returns the error of a read from a connection the peer
// reset (closed with SO_LINGER 0).
func readAfterReset(t *testing.T) error {
	reset := make(chan struct{})
	addr := serveLoopback(t, func(conn net.Conn) {
		defer close(reset)
		if _, err := conn.Read(make([]byte, 1)); err != nil {
			return
		}
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{'Q'}); err != nil { // the statement
		t.Fatal(err)
	}
	<-reset
	_, err = conn.Read(make([]byte, 1))
	if err == io.EOF {
		t.Fatal("read got EOF, not a reset")
	}
	return err
}

var (
	netDialError = net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	errBadConn   = driver.ErrBadConn
)
