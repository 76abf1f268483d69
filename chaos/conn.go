package chaos

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
)

// conn is a connection of the wrapped driver with the Connector's Faults
// injected into its calls. database/sql uses a connection from one
// goroutine at a time.
type conn struct {
	c         *Connector
	real      driver.Conn
	net       *netConn    // the connection chaos dialed for pgx or mysql, or nil
	dead      atomic.Bool // a Fault broke the connection: every call fails with driver.ErrBadConn
	carry     *carry      // see do; used by the connection's one caller at a time
	closeOnce sync.Once
	closeErr  error
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

// Unwrap returns the wrapped driver's connection, which respool.RawConn
// follows from the connection sql.Conn.Raw passes to its function.
func (c *conn) Unwrap() driver.Conn { return c.real }

// do runs call, a call of op (with its query, if any) made with ctx, under
// the Faults. release frees what call returned (rows, a statement) when a
// KindDrop with AfterSend drops the connection after the call.
//
// A driver may answer a call with driver.ErrSkip (go-sql-driver/mysql does
// for arguments without interpolateParams), on which database/sql prepares
// the query and runs it as a statement on the same connection: the plan of
// the skipped call is carried to that statement's Exec or Query, so that the
// call meets its Faults once.
func do[T any](cn *conn, ctx context.Context, op Op, query string, call func(context.Context) (T, error), release func(T)) (T, error) {
	var zero T
	if cn.dead.Load() {
		return zero, driver.ErrBadConn
	}
	p, carried := cn.takeCarry(op, query)
	if !carried {
		p = cn.c.plan(op)
		cn.c.sleep(ctx, p.delay)
	}
	f := p.fail
	skipped := func(err error) bool {
		if err == driver.ErrSkip {
			cn.carry = &carry{op: op, query: query, fail: f}
			return true
		}
		return false
	}
	switch {
	case f == nil:
		v, err := call(ctx)
		skipped(err)
		return v, err
	case f.Kind == KindError:
		if f.fatal {
			cn.kill()
		}
		return zero, f.err()
	case f.Kind == KindDrop && !f.AfterSend:
		cn.kill()
		return zero, driver.ErrBadConn
	case f.Kind == KindDrop:
		v, err := call(ctx)
		if skipped(err) {
			return zero, err
		}
		if err == nil && release != nil {
			release(v)
		}
		cn.kill()
		return zero, lostError(cn.c.flavor)
	case cn.net != nil: // KindFreeze on a connection chaos dialed
		thaw := cn.c.freezeNet(cn.net)
		v, err := call(ctx)
		thaw()
		if skipped(err) || err == nil { // answered without the network
			return v, err
		}
		cn.kill()
		return zero, err
	default: // KindFreeze
		err := cn.c.freeze(ctx)
		cn.kill()
		return zero, err
	}
}

// carry is the plan of a call the driver skipped, for the statement
// database/sql runs instead.
type carry struct {
	op    Op
	query string
	fail  *fault
}

// takeCarry returns the plan carried for a call of op with query, if any. A
// carried plan waits through the Prepare of the statement; any other call
// ends it.
func (cn *conn) takeCarry(op Op, query string) (plan, bool) {
	c := cn.carry
	if op == OpPrepare || c == nil {
		return plan{}, false
	}
	cn.carry = nil
	return plan{fail: c.fail}, c.op == op && c.query == query
}

// kill breaks the connection, as the server or the network would: the real
// connection is closed at once.
func (cn *conn) kill() {
	cn.dead.Store(true)
	cn.closeReal()
}

func (cn *conn) closeReal() error {
	cn.closeOnce.Do(func() { cn.closeErr = cn.real.Close() })
	return cn.closeErr
}

// Close closes the wrapped connection.
func (cn *conn) Close() error { return cn.closeReal() }

func (cn *conn) Prepare(query string) (driver.Stmt, error) {
	return cn.PrepareContext(context.Background(), query)
}

func (cn *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := do(cn, ctx, OpPrepare, query, func(ctx context.Context) (driver.Stmt, error) {
		if p, ok := cn.real.(driver.ConnPrepareContext); ok {
			return p.PrepareContext(ctx, query)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return cn.real.Prepare(query)
	}, func(s driver.Stmt) { _ = s.Close() })
	if err != nil {
		return nil, err
	}
	return &stmt{cn: cn, real: s, query: query}, nil
}

// ExecContext runs the query on the wrapped connection. A driver without
// ExecerContext or Execer gets driver.ErrSkip, on which database/sql
// prepares a statement, whose Exec meets the Faults.
func (cn *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	var call func(context.Context) (driver.Result, error)
	switch e := cn.real.(type) {
	case driver.ExecerContext:
		call = func(ctx context.Context) (driver.Result, error) { return e.ExecContext(ctx, query, args) }
	//lint:ignore SA1019 the wrapped driver may only have the old interface
	case driver.Execer:
		call = func(ctx context.Context) (driver.Result, error) {
			vs, err := values(ctx, args)
			if err != nil {
				return nil, err
			}
			return e.Exec(query, vs)
		}
	default:
		return nil, driver.ErrSkip
	}
	return do(cn, ctx, OpExec, query, call, nil)
}

// QueryContext is ExecContext for queries.
func (cn *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	var call func(context.Context) (driver.Rows, error)
	switch q := cn.real.(type) {
	case driver.QueryerContext:
		call = func(ctx context.Context) (driver.Rows, error) { return q.QueryContext(ctx, query, args) }
	//lint:ignore SA1019 the wrapped driver may only have the old interface
	case driver.Queryer:
		call = func(ctx context.Context) (driver.Rows, error) {
			vs, err := values(ctx, args)
			if err != nil {
				return nil, err
			}
			return q.Query(query, vs)
		}
	default:
		return nil, driver.ErrSkip
	}
	return do(cn, ctx, OpQuery, query, call, closeRows)
}

func (cn *conn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	t, err := do(cn, ctx, OpBegin, "", func(ctx context.Context) (driver.Tx, error) {
		if b, ok := cn.real.(driver.ConnBeginTx); ok {
			return b.BeginTx(ctx, opts)
		}
		// As database/sql does for a driver without ConnBeginTx.
		switch {
		case opts.Isolation != driver.IsolationLevel(0):
			return nil, errors.New("sql: driver does not support non-default isolation level")
		case opts.ReadOnly:
			return nil, errors.New("sql: driver does not support read-only transactions")
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		//lint:ignore SA1019 the wrapped driver has nothing else
		return cn.real.Begin()
	}, nil)
	if err != nil {
		return nil, err
	}
	return &tx{cn: cn, real: t, ctx: ctx}, nil
}

// Ping pings the wrapped connection if it can; a Fault on OpPing applies
// either way.
func (cn *conn) Ping(ctx context.Context) error {
	_, err := do(cn, ctx, OpPing, "", func(ctx context.Context) (struct{}, error) {
		if p, ok := cn.real.(driver.Pinger); ok {
			return struct{}{}, p.Ping(ctx)
		}
		return struct{}{}, nil
	}, nil)
	return err
}

// ResetSession resets the wrapped connection if it can; a broken one
// returns driver.ErrBadConn, and database/sql discards it.
func (cn *conn) ResetSession(ctx context.Context) error {
	_, err := do(cn, ctx, OpReset, "", func(ctx context.Context) (struct{}, error) {
		if r, ok := cn.real.(driver.SessionResetter); ok {
			return struct{}{}, r.ResetSession(ctx)
		}
		return struct{}{}, nil
	}, nil)
	return err
}

// IsValid reports false for a connection a Fault broke, and what the
// wrapped connection reports otherwise.
func (cn *conn) IsValid() bool {
	if cn.dead.Load() {
		return false
	}
	v, ok := cn.real.(driver.Validator)
	return !ok || v.IsValid()
}

// CheckNamedValue lets the wrapped driver convert arguments as it does
// without chaos (pgx accepts its own types).
func (cn *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := cn.real.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func closeRows(r driver.Rows) { _ = r.Close() }

// values converts arguments for a driver's old interfaces, as database/sql
// does.
func values(ctx context.Context, named []driver.NamedValue) ([]driver.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vs := make([]driver.Value, len(named))
	for i, nv := range named {
		if nv.Name != "" {
			return nil, errors.New("sql: driver does not support the use of Named Parameters")
		}
		vs[i] = nv.Value
	}
	return vs, nil
}
