package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
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

// create opens a connection with c.connector.Connect.
func (c connFactory) create(ctx context.Context) (driver.Conn, error) {
	return c.connector.Connect(ctx)
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
