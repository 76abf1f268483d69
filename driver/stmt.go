package driver

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"
)

// stmt is a statement database/sql prepared on a conn. Its real statement
// lives on the connection the conn had when it was prepared and is closed
// when that connection goes back to the pool; the next use prepares it again
// on the connection the conn has then. It is watched for driver.ErrBadConn
// like tx, and its rows hold the Handle like the conn's (see rows).
type stmt struct {
	c        *conn
	query    string
	inner    driver.Stmt // nil until prepared on the conn's current connection
	numInput int
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

// ready makes sure s is prepared on its conn's current connection. Call it
// with the conn locked.
func (s *stmt) ready(ctx context.Context) error {
	if err := s.c.ready(); err != nil {
		return err
	}
	if s.inner != nil {
		return nil
	}
	inner, err := s.c.prepare(ctx, s.query)
	if err != nil {
		return err
	}
	s.inner = inner
	s.c.stmts = append(s.c.stmts, s)
	return nil
}

// closeInner closes the real statement (its connection is about to go back).
func (s *stmt) closeInner() {
	if s.inner != nil {
		_ = s.inner.Close()
		s.inner = nil
	}
}

func (s *stmt) Close() error {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	if s.inner == nil {
		return nil
	}
	err := s.inner.Close()
	s.inner = nil
	if i := slices.Index(s.c.stmts, s); i >= 0 {
		s.c.stmts = slices.Delete(s.c.stmts, i, i+1)
	}
	return err
}

func (s *stmt) NumInput() int { return s.numInput }

// Exec is the pre-context form.
//
// Deprecated: database/sql calls ExecContext.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	return s.execValues(args)
}

func (s *stmt) execValues(args []driver.Value) (driver.Result, error) {
	if err := s.ready(context.Background()); err != nil {
		return nil, err
	}
	r, err := s.inner.Exec(args)
	return r, s.c.check(err)
}

// Query is the pre-context form.
//
// Deprecated: database/sql calls QueryContext.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	return s.queryValues(args)
}

func (s *stmt) queryValues(args []driver.Value) (driver.Rows, error) {
	if err := s.ready(context.Background()); err != nil {
		return nil, err
	}
	r, err := s.inner.Query(args)
	if err != nil {
		return nil, s.c.check(err)
	}
	return s.c.lend(r), nil
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if ec, ok := s.inner.(driver.StmtExecContext); ok {
		r, err := ec.ExecContext(ctx, args)
		return r, s.c.check(err)
	}
	values, err := plainValues(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.execValues(values)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if qc, ok := s.inner.(driver.StmtQueryContext); ok {
		r, err := qc.QueryContext(ctx, args)
		if err != nil {
			return nil, s.c.check(err)
		}
		return s.c.lend(r), nil
	}
	values, err := plainValues(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.queryValues(values)
}

// CheckNamedValue asks the statement's checker, else the connection's, as
// database/sql would have without the wrapper.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	locked := s.c.lock()
	defer s.c.unlock(locked)
	if nc, ok := s.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(nv)
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
