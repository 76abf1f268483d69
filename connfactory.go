package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/internal/resil"
)

// connFactory is the life cycle of database/sql connections made by any
// driver.Connector: create is Connect, validate is driver.Validator, test is
// driver.Pinger (or testQuery when set) and destroy is Close. physFactory
// applies it to the real connection inside each physConn.
type connFactory struct {
	// connector makes the connections. Required.
	connector driver.Connector
	// testQuery, when not empty, is run by test instead of Ping, for drivers
	// whose connections do not implement driver.Pinger or whose Ping does not
	// reach the server.
	testQuery string
}

// create opens a connection with c.connector.Connect. The error of an
// attempt whose connector is respool's pgx or go-sql-driver/mysql one (see
// dialedConnector) is redacted of the password a hook gave it
// (Config.PgxBeforeConnect, MySQLBeforeConnect), and, when the server
// refused the credentials, names the user and the address (see
// credentialsError).
func (c connFactory) create(ctx context.Context) (driver.Conn, error) {
	creds := new(attemptCreds)
	conn, err := c.connector.Connect(context.WithValue(ctx, attemptCredsKey{}, creds))
	if err != nil {
		return nil, creds.explain(err)
	}
	return conn, nil
}

// attemptCreds is what one connection attempt authenticated with, noted by
// the BeforeConnect of respool's pgx and go-sql-driver/mysql connectors,
// after the Config's hook ran: for the attempt's error. Its methods are
// nil-safe (an attempt not made by connFactory.create has none).
type attemptCreds struct {
	noted    bool
	user     string
	addr     string
	password string // given by the hook (none without a hook: the DSN's is redacted by redactingConnector)
	hooked   bool   // a hook gave the credentials: the next attempt asks it again
}

// attemptCredsKey is the context key of an attempt's *attemptCreds.
type attemptCredsKey struct{}

// note records the attempt's user, address and, from a hook, password.
func (a *attemptCreds) note(user, addr, password string, hooked bool) {
	if a == nil {
		return
	}
	*a = attemptCreds{noted: true, user: user, addr: addr, password: password, hooked: hooked}
}

// explain returns err, the attempt's error, redacted of the hook's
// password, and, when the server refused the credentials
// (dbguard.Classification.Auth), as a *credentialsError naming the user
// and the address.
func (a *attemptCreds) explain(err error) error {
	if !a.noted {
		return err
	}
	if a.password != "" {
		err = dsnform.Secrets(nil).With(a.password).Redact(err)
	}
	if dbguard.Classify(err).Auth {
		return &credentialsError{user: a.user, addr: a.addr, fresh: a.hooked, err: err}
	}
	return err
}

// credentialsError is a connection attempt the server refused for its
// credentials (PostgreSQL 28P01, 28000; MySQL and MariaDB 1045, 1698): it
// names the user and the server's address, never the password, and opens
// the circuit (see dbguard.Factory). errors.As finds the real driver's
// error. With credentials from a hook it matches
// resil.ErrFreshCredentials: dbguard makes the attempt once more, asking
// the hook again, before it opens the circuit.
type credentialsError struct {
	user, addr string
	fresh      bool
	err        error
}

func (e *credentialsError) Error() string {
	return fmt.Sprintf("respool: the server at %s refused the credentials of user %q: %v", e.addr, e.user, e.err)
}

func (e *credentialsError) Unwrap() error { return e.err }

func (e *credentialsError) Is(target error) bool {
	return e.fresh && target == resil.ErrFreshCredentials
}

// validate asks the connection's driver.Validator, if it has one; a
// connection without one is taken as valid.
func (c connFactory) validate(conn driver.Conn) error {
	if v, ok := conn.(driver.Validator); ok && !v.IsValid() {
		return driver.ErrBadConn
	}
	return nil
}

// test runs testQuery when set, else Ping when the connection is a
// driver.Pinger; a connection with neither passes.
func (c connFactory) test(ctx context.Context, conn driver.Conn) error {
	if c.testQuery != "" {
		return runTestQuery(ctx, conn, c.testQuery)
	}
	if p, ok := conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// destroy closes the connection.
func (c connFactory) destroy(conn driver.Conn) error {
	return conn.Close()
}

func runTestQuery(ctx context.Context, conn driver.Conn, query string) error {
	qc, ok := conn.(driver.QueryerContext)
	if !ok {
		return fmt.Errorf("respool: test query: %T does not implement driver.QueryerContext", conn)
	}
	rows, err := qc.QueryContext(ctx, query, nil)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			rows.Close()
			return err
		}
	}
	return rows.Close()
}

// resetSession calls the connection's driver.SessionResetter, when it has
// one, with the caller's context, as database/sql does before it reuses a
// connection (drivers check there that an idle connection is still alive).
func resetSession(ctx context.Context, conn driver.Conn) error {
	if sr, ok := conn.(driver.SessionResetter); ok {
		return sr.ResetSession(ctx)
	}
	return nil
}
