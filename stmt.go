package respool

import (
	"context"
	"database/sql/driver"
	"errors"
)

// stmt is a statement database/sql prepared on a conn. The real statement
// lives in the statement cache of each physical connection the conn uses it
// on (physConn.stmts): prepared there on its first use, kept while any
// statement of the query is open, and closed there once none is (when the
// connection is next taken or tested, or at once if it is the conn's), or
// when the connection is destroyed. So a *sql.Stmt is prepared at most once
// per physical connection, whichever shells database/sql runs it on. It is
// watched for driver.ErrBadConn like tx, and its rows hold the Handle like
// the conn's (see rows). Behind PgBouncer's transaction mode the real
// statement is an unnamedStmt, which holds nothing on the server (see
// Config.PgBouncer).
type stmt struct {
	c        *conn
	query    string
	numInput int
	closed   bool
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

// inner returns the real statement on the conn's current connection,
// preparing it there if needed. Call it with the conn locked.
func (s *stmt) inner(ctx context.Context) (driver.Stmt, error) {
	if err := s.c.ready(); err != nil {
		return nil, err
	}
	return s.c.pc.stmts.get(ctx, s.query, s.c.prepare)
}

// Close ends this statement; the last of its query closes the real
// statement on the conn's connection now, and on the others when they are
// next taken or tested.
func (s *stmt) Close() error {
	c := s.c
	locked := c.lock()
	defer c.unlock(locked)
	if s.closed {
		return nil
	}
	s.closed = true
	if c.c.stmts.closed(s.query) && c.ready() == nil {
		c.pc.stmts.dropQuery(s.query)
	}
	return nil
}

func (s *stmt) NumInput() int { return s.numInput }

// Exec is the pre-context form.
//
// Deprecated: database/sql calls ExecContext.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	return s.execValues(context.Background(), args)
}

func (s *stmt) execValues(ctx context.Context, args []driver.Value) (driver.Result, error) {
	inner, err := s.inner(ctx)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the wrapped driver has nothing newer
	return runStatement(ctx, s.c, func() (driver.Result, error) { return inner.Exec(args) })
}

// Query is the pre-context form.
//
// Deprecated: database/sql calls QueryContext.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	return s.queryValues(context.Background(), args)
}

func (s *stmt) queryValues(ctx context.Context, args []driver.Value) (driver.Rows, error) {
	inner, err := s.inner(ctx)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the wrapped driver has nothing newer
	r, err := runStatement(ctx, s.c, func() (driver.Rows, error) { return inner.Query(args) })
	if err != nil {
		return nil, err
	}
	return s.c.lend(r), nil
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	inner, err := s.inner(ctx)
	if err != nil {
		return nil, err
	}
	if ec, ok := inner.(driver.StmtExecContext); ok {
		return runStatement(ctx, s.c, func() (driver.Result, error) { return ec.ExecContext(ctx, args) })
	}
	values, err := plainValues(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.execValues(ctx, values)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	inner, err := s.inner(ctx)
	if err != nil {
		return nil, err
	}
	if qc, ok := inner.(driver.StmtQueryContext); ok {
		r, err := runStatement(ctx, s.c, func() (driver.Rows, error) { return qc.QueryContext(ctx, args) })
		if err != nil {
			return nil, err
		}
		return s.c.lend(r), nil
	}
	values, err := plainValues(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.queryValues(ctx, values)
}

// CheckNamedValue asks the statement's checker, else the connection's, as
// database/sql would have without the wrapper.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	if s.c.ready() == nil {
		if e := s.c.pc.stmts.byQuery[s.query]; e != nil {
			if nc, ok := e.inner.(driver.NamedValueChecker); ok {
				return nc.CheckNamedValue(nv)
			}
		}
	}
	return s.c.checkNamedValue(nv)
}

// plainValues converts args for a driver without the context interfaces,
// as database/sql does.
func plainValues(ctx context.Context, args []driver.NamedValue) ([]driver.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	values := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("respool: the wrapped driver does not support named parameters")
		}
		values[i] = a.Value
	}
	return values, nil
}
