package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/respool/respool/pool"
)

// conn is what database/sql holds for a respool connection. It holds a real
// connection from the pool (attached) only while database/sql uses it:
// when database/sql puts it in its idle list (IsValid), the real connection
// goes back to respool's pool and the conn keeps nothing but its shell;
// when database/sql takes it again (ResetSession), it takes a connection
// from the pool (bounded by the caller's context, subject to the pool's
// queue, and checked by the real driver's ResetSession: see
// physFactory.beforeHandOut). So database/sql's idle list holds no
// connection, and respool's pool alone decides how many exist, how long
// they idle, who waits and who leaked.
//
// Giving a connection back does no I/O: it cannot block.
//
// Every method delegates to the real connection; its errors pass through
// unchanged. Each call that goes to the server (prepare, begin, exec,
// query, ping) enters the Connector's breaker first and records its
// outcome there (dbguard.Guard Enter and Exit): while the circuit is open
// it fails at once with the breaker's rejection. database/sql serialises every call on a conn (its driverConn's
// lock), so the fields need no lock of their own, but for one case: while
// rows hold the Handle (lent), the pool may reclaim the connection as leaked
// if those rows are lost, from another goroutine (physFactory.Destroy). So a
// call made while lent holds mu, and reclaim takes it too.
type conn struct {
	c      *Connector
	h      pool.Handle[driver.Conn] // invalid while detached, or while lent to rows
	pc     *physConn                // the attached connection; nil while detached
	inner  driver.Conn              // pc's real connection; nil while detached
	broken bool                     // the attached connection failed with driver.ErrBadConn
	inTx   bool                     // a transaction of the real driver is open on the attached connection
	closed bool
	// txReadOnly: that transaction was begun with TxOptions.ReadOnly, so
	// a refusal as read-only in it is the caller's (see leaveReadOnly).
	txReadOnly bool
	// txRefusal is a write refused as read-only in that transaction, to
	// be looked into when it ends (see leaveReadOnlyAfterTx); else nil.
	txRefusal error
	// takeErr is why the last take (ResetSession) gave the detached conn no
	// connection: its calls return it (see attach).
	takeErr error

	// lent is set while rows hold the Handle; written under mu. Once the
	// connection is reclaimed it stays set, so that every call takes mu and
	// sees reclaimed.
	lent      atomic.Bool
	mu        sync.Mutex // held by calls made while lent, and by reclaim
	reclaimed bool       // the pool reclaimed the connection as leaked; guarded by mu
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

var (
	// errDetached is what a method of a detached conn returns: database/sql
	// then drops the shell and retries on another connection. It cannot
	// happen through database/sql, which resets a conn before reusing it.
	errDetached = driver.ErrBadConn
	// errReclaimed is what a method of a conn whose connection was reclaimed
	// as leaked returns. It is not driver.ErrBadConn: on a *sql.Conn,
	// database/sql would then close the Conn, which waits for the lost rows
	// to close, forever.
	errReclaimed = errors.New("respool: the connection was closed: a *sql.Rows read from it was lost without Close (LEAK-DETECTED)")
)

// lock takes mu when rows hold the Handle (see conn); unlock(locked) ends it.
func (c *conn) lock() bool {
	if !c.lent.Load() {
		return false
	}
	c.mu.Lock()
	return true
}

func (c *conn) unlock(locked bool) {
	if locked {
		c.mu.Unlock()
	}
}

// ready returns nil if the conn can use its connection: it is attached and
// its connection was not reclaimed. Call it between lock and unlock.
func (c *conn) ready() error {
	switch {
	case c.reclaimed:
		return errReclaimed
	case c.inner == nil && c.takeErr != nil:
		return c.takeErr
	case c.inner == nil:
		return errDetached
	}
	return nil
}

// Unwrap returns the real driver's connection (for sql.Conn.Raw users); nil
// while detached.
func (c *conn) Unwrap() driver.Conn {
	locked := c.lock()
	defer c.unlock(locked)
	return c.inner
}

// check notes a driver.ErrBadConn: that connection must not be reused.
func (c *conn) check(err error) error {
	if err != nil && isBadConn(err) {
		c.broken = true
	}
	return err
}

// isBadConn reports an error after which the connection must not be reused.
func isBadConn(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, ErrStatementLost)
}

// attach takes a connection from the pool for database/sql reusing the
// shell. A failed take (queue full, AcquireTimeout, context ended, pool
// closed, creation failed) is kept in takeErr, and the call database/sql
// then makes on the shell returns it to the caller: database/sql ignores an
// error of ResetSession other than driver.ErrBadConn, and on that one it
// would retry twice more, each retry waiting again (three AcquireTimeouts
// for one query). So a query waits once, and its caller gets the pool's
// error (or the real driver's, when making a connection failed), as
// Connector.Connect returns it.
func (c *conn) attach(ctx context.Context) {
	h, err := c.c.take(ctx)
	if err != nil {
		c.takeErr = err
		return
	}
	c.takeErr = nil
	c.setAttached(h)
}

func (c *conn) setAttached(h pool.Handle[driver.Conn]) {
	pc := h.Value().(*physConn)
	c.h, c.pc, c.inner = h, pc, pc.Conn
	pc.shell.Store(c)
}

// release gives the attached connection back to the pool, or discards it
// when it is broken. GiveBack validates it too (driver.Validator). Nothing
// here waits on the network: the real driver's ResetSession runs when the
// connection is next taken (physFactory.beforeHandOut). The conn is then a
// detached shell. If rows still hold the Handle (not done through
// database/sql), they give it back as they close.
func (c *conn) release() error {
	h, broken := c.h, c.broken
	c.pc.shell.Store(nil)
	c.h, c.pc, c.inner, c.broken = pool.Handle[driver.Conn]{}, nil, nil, false
	c.inTx, c.txReadOnly, c.txRefusal = false, false, nil
	c.lent.Store(false)
	switch {
	case h == (pool.Handle[driver.Conn]{}): // lent to rows
		return nil
	case broken:
		return h.Discard()
	}
	return h.GiveBack()
}

// lend moves the Handle into rows the conn's connection has just returned
// (see rows).
func (c *conn) lend(inner driver.Rows) driver.Rows {
	r := &rows{c: c, pc: c.pc, inner: inner}
	if c.h != (pool.Handle[driver.Conn]{}) {
		c.lent.Store(true)
		r.h, c.h = c.h, pool.Handle[driver.Conn]{}
	}
	return r
}

// reclaim is the pool destroying pc, the conn's connection, whose Handle was
// lost with the rows that held it: the conn keeps no connection, and its
// calls fail with errReclaimed. It closes pc under mu, so that no call of the
// conn's user runs on the connection as it closes.
func (c *conn) reclaim(pc *physConn, closeConn func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pc == pc {
		c.reclaimed = true
		c.lent.Store(true)
		c.h, c.pc, c.inner = pool.Handle[driver.Conn]{}, nil, nil
	}
	return closeConn()
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	locked := c.lock()
	defer c.unlock(locked)
	if err := c.ready(); err != nil {
		return nil, err
	}
	inner, err := c.pc.stmts.get(ctx, query, c.prepare)
	if err != nil {
		return nil, err
	}
	c.c.stmts.opened(query)
	return &stmt{c: c, query: query, numInput: inner.NumInput()}, nil
}

// prepare prepares query on the attached connection (for PgBouncer's
// transaction mode, as an unnamedStmt).
func (c *conn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	p, err := c.c.guard.Enter(ctx)
	if err != nil {
		return nil, err
	}
	var s driver.Stmt
	if c.c.unnamedStmts {
		s, err = prepareUnnamed(ctx, c.inner, query)
		err = contextStopped(ctx, err)
	} else if pc, ok := c.inner.(driver.ConnPrepareContext); ok {
		s, err = pc.PrepareContext(ctx, query)
		err = contextStopped(ctx, err)
	} else if err = ctx.Err(); err == nil {
		s, err = c.inner.Prepare(query)
	}
	c.c.guard.Exit(ctx, p, err)
	return s, c.check(err)
}

// Begin is the pre-context form; database/sql calls BeginTx.
//
// Deprecated: use BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	locked := c.lock()
	defer c.unlock(locked)
	if err := c.ready(); err != nil {
		return nil, err
	}
	bc, ok := c.inner.(driver.ConnBeginTx)
	if !ok && (opts.Isolation != 0 || opts.ReadOnly) {
		return nil, errors.New("respool: the wrapped driver supports neither isolation levels nor read-only transactions")
	}
	p, err := c.c.guard.Enter(ctx)
	if err != nil {
		return nil, err
	}
	var t driver.Tx
	if ok {
		t, err = bc.BeginTx(ctx, opts)
	} else {
		//lint:ignore SA1019 the wrapped driver has nothing newer
		t, err = c.inner.Begin()
	}
	c.c.guard.Exit(ctx, p, err)
	return c.tx(t, opts.ReadOnly, err)
}

// tx wraps the real driver's transaction, to watch it for driver.ErrBadConn.
func (c *conn) tx(t driver.Tx, readOnly bool, err error) (driver.Tx, error) {
	if err != nil {
		return nil, c.check(err)
	}
	c.inTx, c.txReadOnly = true, readOnly
	return tx{c: c, inner: t}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	locked := c.lock()
	defer c.unlock(locked)
	if err := c.ready(); err != nil {
		return nil, err
	}
	ec, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip // database/sql prepares instead
	}
	return runStatement(ctx, c, func() (driver.Result, error) { return ec.ExecContext(ctx, query, args) })
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	locked := c.lock()
	defer c.unlock(locked)
	if err := c.ready(); err != nil {
		return nil, err
	}
	qc, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := runStatement(ctx, c, func() (driver.Rows, error) { return qc.QueryContext(ctx, query, args) })
	if err != nil {
		return nil, err
	}
	return c.lend(r), nil
}

// Exec is the pre-context form (driver.Execer), which database/sql does not
// call. It is here for code that asserts it on the connection sql.Conn.Raw
// passes, as go-sql-driver/mysql's README does to read the mysql.Result of
// several statements: it runs as ExecContext does, without a deadline, and
// returns driver.ErrSkip when the real connection has no ExecContext.
//
// Deprecated: use ExecContext.
func (c *conn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return c.ExecContext(context.Background(), query, namedValues(args))
}

// Query is the pre-context form (driver.Queryer), as Exec.
//
// Deprecated: use QueryContext.
func (c *conn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return c.QueryContext(context.Background(), query, namedValues(args))
}

// namedValues gives args their ordinals, as database/sql does; the inverse
// of plainValues.
func namedValues(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv
}

// runStatement runs a statement (an exec or a query) on the attached
// connection: admitted by the Connector's breaker and its outcome recorded
// there, its error as the caller sees it (physConn.statementErr), a
// lost connection told to the watch of the hosts, if any, and a
// broken connection noted (check).
func runStatement[T any](ctx context.Context, c *conn, run func() (T, error)) (T, error) {
	p, err := c.c.guard.Enter(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	mark := c.pc.sentMark()
	r, err := run()
	err = c.leaveReadOnly(ctx, mark, c.pc.statementErr(ctx, mark, err))
	if c.c.watch != nil && serverGone(err) {
		c.c.watch.failed() // until its first look new attempts are refused (ErrNoWritableServer) rather than each dialing every host
	}
	c.c.guard.Exit(ctx, p, err)
	return r, c.check(err)
}

func (c *conn) Ping(ctx context.Context) error {
	locked := c.lock()
	defer c.unlock(locked)
	if err := c.ready(); err != nil {
		return err
	}
	pinger, ok := c.inner.(driver.Pinger)
	if !ok {
		return nil
	}
	p, err := c.c.guard.Enter(ctx)
	if err != nil {
		return err
	}
	err = pinger.Ping(ctx)
	c.c.guard.Exit(ctx, p, err)
	return c.check(err)
}

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	locked := c.lock()
	defer c.unlock(locked)
	return c.checkNamedValue(nv)
}

// checkNamedValue: a conn whose take failed accepts every value as it is.
// database/sql reads a statement's arguments before it runs the statement,
// and would report an error here as "sql: converting argument $1 type:"
// the take's error; the statement's call returns the take's error itself
// (ready), as it does for a statement without arguments.
func (c *conn) checkNamedValue(nv *driver.NamedValue) error {
	if c.inner == nil && c.takeErr != nil {
		return nil
	}
	if nc, ok := c.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// ResetSession is called by database/sql before it reuses an idle conn: the
// conn takes a connection from the pool, which checks it with the real
// driver's ResetSession (physFactory.beforeHandOut). On an attached conn
// (not reached through database/sql, which detaches a conn as it goes idle)
// it asks the real connection whether its session can be reused, within
// the pool's TestTimeout.
func (c *conn) ResetSession(ctx context.Context) error {
	locked := c.lock()
	defer c.unlock(locked)
	switch {
	case c.reclaimed:
		return errReclaimed
	case c.inner == nil:
		c.attach(ctx)
		return nil // a failed take is the error of the shell's next call (see attach)
	case c.broken:
		return driver.ErrBadConn
	}
	ctx, cancel := context.WithTimeout(ctx, c.c.testTimeout)
	defer cancel()
	if err := resetSession(ctx, c.inner); err != nil {
		c.broken = true
		return driver.ErrBadConn
	}
	return nil
}

// IsValid is called by database/sql as it puts the conn back in its idle
// list: the real connection goes back to respool's pool, and database/sql
// keeps a shell that holds nothing. A conn whose connection broke or was
// reclaimed reports false, so database/sql drops the shell too.
func (c *conn) IsValid() bool {
	locked := c.lock()
	defer c.unlock(locked)
	if c.reclaimed {
		return false
	}
	if c.inner == nil {
		return true
	}
	broken := c.broken
	_ = c.release() // only ErrAlreadyReturned, which cannot happen here
	return !broken
}

// Close gives the attached connection, if any, back to the pool.
func (c *conn) Close() error {
	locked := c.lock()
	defer c.unlock(locked)
	if c.closed {
		return nil
	}
	c.closed = true
	if c.inner == nil {
		return nil
	}
	return c.release()
}
