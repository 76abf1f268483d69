package driver

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/respool/respool/pool"
)

// conn is what database/sql holds for a respool connection. It holds a real
// connection from the pool (attached) only while database/sql uses it:
// when database/sql puts it in its idle list (IsValid), the real connection
// goes back to respool's pool and the conn keeps nothing but its shell;
// when database/sql takes it again (ResetSession), it takes a connection
// from the pool (Connector.take: bounded by the caller's context, subject to
// the pool's queue, and checked by the real driver's ResetSession). So
// database/sql's idle list holds no connection, and respool's pool alone
// decides how many exist, how long they idle, who waits and who leaked.
//
// Giving a connection back does no I/O: it cannot block.
//
// Every method delegates to the real connection; its errors pass through
// unchanged. database/sql serialises every call on a conn (its driverConn's
// lock), so the fields need no lock.
type conn struct {
	c      *Connector
	h      pool.Handle[driver.Conn]
	pc     *physConn   // the attached connection; nil while detached
	inner  driver.Conn // pc's real connection; nil while detached
	broken bool        // the attached connection failed with driver.ErrBadConn
	stmts  []*stmt     // prepared on the attached connection; closed before it goes back
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

// errDetached is what a method of a detached conn returns: database/sql
// then drops the shell and retries on another connection. It cannot happen
// through database/sql, which resets a conn before reusing it.
var errDetached = driver.ErrBadConn

// Unwrap returns the real driver's connection (for sql.Conn.Raw users); nil
// while detached.
func (c *conn) Unwrap() driver.Conn { return c.inner }

// check notes a driver.ErrBadConn: that connection must not be reused.
func (c *conn) check(err error) error {
	if err != nil && errors.Is(err, driver.ErrBadConn) {
		c.broken = true
	}
	return err
}

// attach takes a connection from the pool. A refusal (queue full, context
// ended, pool closed, creation failed) is reported as driver.ErrBadConn, so
// that database/sql drops the shell and ends with Connector.Connect, which
// returns the pool's own error to the caller.
func (c *conn) attach(ctx context.Context) error {
	h, pc, err := c.c.take(ctx)
	if err != nil {
		return driver.ErrBadConn
	}
	c.setAttached(h, pc)
	return nil
}

func (c *conn) setAttached(h pool.Handle[driver.Conn], pc *physConn) {
	c.h, c.pc, c.inner = h, pc, pc.Conn
}

// release gives the attached connection back to the pool, after closing the
// statements prepared on it, or discards it when it is broken. GiveBack
// validates it too (driver.Validator). Nothing here waits on the network:
// the real driver's ResetSession runs when the connection is next taken
// (Connector.take). The conn is then a detached shell.
func (c *conn) release() error {
	for _, s := range c.stmts {
		s.closeInner()
	}
	clear(c.stmts)
	c.stmts = c.stmts[:0]
	p, h, broken := c.c.pool, c.h, c.broken
	c.h, c.pc, c.inner, c.broken = pool.Handle[driver.Conn]{}, nil, nil, false
	if broken {
		return p.Discard(h)
	}
	return p.GiveBack(h)
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.inner == nil {
		return nil, errDetached
	}
	inner, err := c.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	s := &stmt{c: c, query: query, inner: inner, numInput: inner.NumInput()}
	c.stmts = append(c.stmts, s)
	return s, nil
}

// prepare prepares query on the attached connection.
func (c *conn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	if pc, ok := c.inner.(driver.ConnPrepareContext); ok {
		s, err := pc.PrepareContext(ctx, query)
		return s, c.check(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := c.inner.Prepare(query)
	return s, c.check(err)
}

// Begin is the pre-context form; database/sql calls BeginTx.
//
// Deprecated: use BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.inner == nil {
		return nil, errDetached
	}
	if bc, ok := c.inner.(driver.ConnBeginTx); ok {
		return c.tx(bc.BeginTx(ctx, opts))
	}
	if opts.Isolation != 0 || opts.ReadOnly {
		return nil, errors.New("respool: the wrapped driver supports neither isolation levels nor read-only transactions")
	}
	//lint:ignore SA1019 the wrapped driver has nothing newer
	return c.tx(c.inner.Begin())
}

// tx wraps the real driver's transaction, to watch it for driver.ErrBadConn.
func (c *conn) tx(t driver.Tx, err error) (driver.Tx, error) {
	if err != nil {
		return nil, c.check(err)
	}
	return tx{c: c, inner: t}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.inner == nil {
		return nil, errDetached
	}
	ec, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip // database/sql prepares instead
	}
	r, err := ec.ExecContext(ctx, query, args)
	return r, c.check(err)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.inner == nil {
		return nil, errDetached
	}
	qc, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := qc.QueryContext(ctx, query, args)
	return r, c.check(err)
}

func (c *conn) Ping(ctx context.Context) error {
	if c.inner == nil {
		return errDetached
	}
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

// ResetSession is called by database/sql before it reuses an idle conn: the
// conn takes a connection from the pool, which the real driver's
// ResetSession checks (Connector.take). On an attached conn (not reached
// through database/sql, which detaches a conn as it goes idle) it asks the
// real connection whether its session can be reused.
func (c *conn) ResetSession(ctx context.Context) error {
	if c.inner == nil {
		return c.attach(ctx)
	}
	if c.broken {
		return driver.ErrBadConn
	}
	if err := c.c.reset(ctx, c.pc); err != nil {
		c.broken = true
		return driver.ErrBadConn
	}
	return nil
}

// IsValid is called by database/sql as it puts the conn back in its idle
// list: the real connection goes back to respool's pool, and database/sql
// keeps a shell that holds nothing. A conn whose connection broke reports
// false, so database/sql drops the shell too.
func (c *conn) IsValid() bool {
	if c.inner == nil {
		return true
	}
	broken := c.broken
	_ = c.release() // only ErrAlreadyReturned, which cannot happen here
	return !broken
}

// Close gives the attached connection, if any, back to the pool.
func (c *conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.inner == nil {
		return nil
	}
	return c.release()
}
