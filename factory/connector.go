package factory

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// Connector is a Factory of driver.Conn built on any driver.Connector:
// Create is Connect, Validate is driver.Validator, Test is driver.Pinger (or
// TestQuery when set) and Destroy is Close.
type Connector struct {
	// Connector makes the connections. Required.
	Connector driver.Connector
	// TestQuery, when not empty, is run by Test instead of Ping, for drivers
	// whose connections do not implement driver.Pinger or whose Ping does not
	// reach the server.
	TestQuery string
	// Hooks are the optional steps around Take and GiveBack; for example
	// Hooks{BeforeHandOut: ResetSession} checks a connection taken from idle
	// as database/sql would before reusing it.
	Hooks Hooks[driver.Conn]
}

var (
	_ Factory[driver.Conn]      = Connector{}
	_ HookProvider[driver.Conn] = Connector{}
)

// LifecycleHooks returns c.Hooks.
func (c Connector) LifecycleHooks() Hooks[driver.Conn] { return c.Hooks }

// ErrNoConnector is returned by Connector.Create when Connector is nil.
var ErrNoConnector = errors.New("factory: Connector.Connector is nil")

// Create opens a connection with c.Connector.Connect.
func (c Connector) Create(ctx context.Context) (driver.Conn, error) {
	if c.Connector == nil {
		return nil, ErrNoConnector
	}
	return c.Connector.Connect(ctx)
}

// Validate asks the connection's driver.Validator, if it has one; a
// connection without one is taken as valid.
func (c Connector) Validate(conn driver.Conn) error {
	if v, ok := conn.(driver.Validator); ok && !v.IsValid() {
		return driver.ErrBadConn
	}
	return nil
}

// Test runs TestQuery when set, else Ping when the connection is a
// driver.Pinger; a connection with neither passes.
func (c Connector) Test(ctx context.Context, conn driver.Conn) error {
	if c.TestQuery != "" {
		return runTestQuery(ctx, conn, c.TestQuery)
	}
	if p, ok := conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// Destroy closes the connection.
func (c Connector) Destroy(conn driver.Conn) error {
	return conn.Close()
}

func runTestQuery(ctx context.Context, conn driver.Conn, query string) error {
	qc, ok := conn.(driver.QueryerContext)
	if !ok {
		return fmt.Errorf("factory: test query: %T does not implement driver.QueryerContext", conn)
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
