package dbguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/resilience/timeout"
)

// isConnectAttempt reports whether err ended an attempt to connect: any
// error of a pgx connection attempt, or a dial error (refused, no route,
// DNS). No statement can have reached the server.
func isConnectAttempt(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	// A custom dialer may return the bare errno; a refusal only happens
	// when connecting.
	return errors.Is(err, syscall.ECONNREFUSED)
}

// nothingSent reports whether the drivers guarantee that nothing of the
// failed operation reached the server.
//
// pgconn's "conn closed" (pgconn.ErrConnClosed) is not trusted although
// pgconn.SafeToRetry reports it safe: pgconn (v5.12.0) also returns it when
// the connection broke after a simple-protocol statement (Exec without
// arguments) was sent, because MultiResultReader.NextResult drops the read
// error and then finds the connection closed.
func nothingSent(err error) bool {
	return isConnectAttempt(err) ||
		errors.Is(err, driver.ErrBadConn) || // the database/sql contract
		pgconn.SafeToRetry(err) && !errors.Is(err, pgconn.ErrConnClosed)
}

// isTimeout reports whether a deadline or an I/O timeout ended the call,
// or the resilience timeout mechanism's own deadline (whose error hides the
// operation's context error from the caller).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || pgconn.Timeout(err) ||
		errors.Is(err, timeout.ErrTimeout) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// isConnectionLost reports whether the connection broke under the call:
// the server or the network closed it, or the driver gave it up.
func isConnectionLost(err error) bool {
	for _, target := range lostConnection {
		if errors.Is(err, target) {
			return true
		}
	}
	var opErr *net.OpError // a read or write on the connection failed
	return errors.As(err, &opErr)
}

var lostConnection = []error{
	io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
	syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED, syscall.ETIMEDOUT,
	pgconn.ErrConnClosed,
	// go-sql-driver/mysql returns ErrInvalidConn when a read fails, which
	// includes a read after the statement was written.
	mysql.ErrInvalidConn, mysql.ErrMalformPkt, mysql.ErrPktSync, mysql.ErrPktSyncMul,
}

// isCallerClientError reports errors the client libraries raise about the
// caller's use or configuration, before or without asking the server.
func isCallerClientError(err error) bool {
	for _, target := range callerClientErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	var (
		parseErr    *pgconn.ParseConfigError
		verifyErr   *tls.CertificateVerificationError
		authorityEr x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidErr  x509.CertificateInvalidError
	)
	return errors.As(err, &parseErr) || errors.As(err, &verifyErr) ||
		errors.As(err, &authorityEr) || errors.As(err, &hostnameErr) || errors.As(err, &invalidErr)
}

var callerClientErrors = []error{
	sql.ErrNoRows, sql.ErrTxDone, sql.ErrConnDone,
	mysql.ErrNoTLS, mysql.ErrCleartextPassword, mysql.ErrNativePassword, mysql.ErrOldPassword,
	mysql.ErrUnknownPlugin, mysql.ErrOldProtocol, mysql.ErrPktTooLarge, mysql.ErrBusyBuffer,
}
