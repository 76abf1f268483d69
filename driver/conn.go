package driver

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/respool/respool/pool"
)

// conn is one use of a pooled connection by database/sql: made by
// Connector.Connect, ended by Close, which hands the connection back to the
// pool (or discards it when it is broken). Every method delegates to the real
// driver's connection; its errors pass through unchanged.
//
// database/sql uses a conn from one goroutine at a time, so broken needs no
// lock.
type conn struct {
	c      *Connector
	h      pool.Handle[driver.Conn]
	inner  driver.Conn
	broken bool // an operation failed with driver.ErrBadConn
	closed bool
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

// Unwrap returns the real driver's connection (for sql.Conn.Raw users).
func (c *conn) Unwrap() driver.Conn { return c.inner }

// check notes a driver.ErrBadConn: that connection must not be reused.
func (c *conn) check(err error) error {
	if err != nil && errors.Is(err, driver.ErrBadConn) {
		c.broken = true
	}
	return err
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	s, err := c.inner.Prepare(query)
	return c.stmt(s, err)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if pc, ok := c.inner.(driver.ConnPrepareContext); ok {
		return c.stmt(pc.PrepareContext(ctx, query))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.Prepare(query)
}

// Begin is the pre-context form; database/sql calls BeginTx.
//
// Deprecated: use BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if bc, ok := c.inner.(driver.ConnBeginTx); ok {
		return c.tx(bc.BeginTx(ctx, opts))
	}
	if opts.Isolation != 0 || opts.ReadOnly {
		return nil, errors.New("respool: the wrapped driver supports neither isolation levels nor read-only transactions")
	}
	//lint:ignore SA1019 the wrapped driver has nothing newer
	return c.tx(c.inner.Begin())
}

// stmt and tx wrap what the real driver returned, to watch it for
// driver.ErrBadConn.
func (c *conn) stmt(s driver.Stmt, err error) (driver.Stmt, error) {
	if err != nil {
		return nil, c.check(err)
	}
	return stmt{c: c, inner: s}, nil
}

func (c *conn) tx(t driver.Tx, err error) (driver.Tx, error) {
	if err != nil {
		return nil, c.check(err)
	}
	return tx{c: c, inner: t}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip // database/sql prepares instead
	}
	r, err := ec.ExecContext(ctx, query, args)
	return r, c.check(err)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := qc.QueryContext(ctx, query, args)
	return r, c.check(err)
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return c.check(p.Ping(ctx))
	}
	return nil
}

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if nc, ok := c.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// ResetSession asks the real connection whether its session can be reused.
func (c *conn) ResetSession(ctx context.Context) error {
	if c.broken {
		return driver.ErrBadConn
	}
	if sr, ok := c.inner.(driver.SessionResetter); ok {
		return c.check(sr.ResetSession(ctx))
	}
	return nil
}

// IsValid is false: database/sql then closes the conn after each use instead
// of keeping it idle, and Close gives the connection back to respool's pool,
// which alone keeps idle connections.
func (c *conn) IsValid() bool { return false }

// Close hands the connection back to the pool, or discards it when it is
// broken, its session cannot be reset, or it is left inside a transaction.
func (c *conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	p := c.c.pool
	if c.broken || c.resetFailed() {
		return p.Discard(c.h)
	}
	return p.GiveBack(c.h) // GiveBack validates, which catches an open transaction
}

func (c *conn) resetFailed() bool {
	sr, ok := c.inner.(driver.SessionResetter)
	return ok && sr.ResetSession(context.Background()) != nil
}
