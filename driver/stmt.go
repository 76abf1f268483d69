package driver

import (
	"context"
	"database/sql/driver"
	"errors"
)

// tx is the real driver's transaction, watched for driver.ErrBadConn so
// that a connection that died in Commit or Rollback is not reused.
// database/sql serialises it with its conn (the driverConn's lock).
type tx struct {
	c     *conn
	inner driver.Tx
}

func (t tx) Commit() error   { return t.c.check(t.inner.Commit()) }
func (t tx) Rollback() error { return t.c.check(t.inner.Rollback()) }

// stmt is the real driver's prepared statement, watched for
// driver.ErrBadConn like tx. Rows are not wrapped (a query's hot path);
// drivers that lose a connection while reading rows mark it invalid
// themselves (driver.Validator), which the pool checks on give-back.
type stmt struct {
	c     *conn
	inner driver.Stmt
}

var (
	_ driver.Stmt              = stmt{}
	_ driver.StmtExecContext   = stmt{}
	_ driver.StmtQueryContext  = stmt{}
	_ driver.NamedValueChecker = stmt{}
)

func (s stmt) Close() error  { return s.inner.Close() }
func (s stmt) NumInput() int { return s.inner.NumInput() }

// Exec is the pre-context form.
//
// Deprecated: database/sql calls ExecContext.
func (s stmt) Exec(args []driver.Value) (driver.Result, error) {
	r, err := s.inner.Exec(args)
	return r, s.c.check(err)
}

// Query is the pre-context form.
//
// Deprecated: database/sql calls QueryContext.
func (s stmt) Query(args []driver.Value) (driver.Rows, error) {
	r, err := s.inner.Query(args)
	return r, s.c.check(err)
}

func (s stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if ec, ok := s.inner.(driver.StmtExecContext); ok {
		r, err := ec.ExecContext(ctx, args)
		return r, s.c.check(err)
	}
	values, err := plainValues(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.Exec(values)
}

func (s stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if qc, ok := s.inner.(driver.StmtQueryContext); ok {
		r, err := qc.QueryContext(ctx, args)
		return r, s.c.check(err)
	}
	values, err := plainValues(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.Query(values)
}

// CheckNamedValue asks the statement's checker, else the connection's, as
// database/sql would have without the wrapper.
func (s stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if nc, ok := s.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}

// ColumnConverter passes the statement's converter through, or the default.
func (s stmt) ColumnConverter(idx int) driver.ValueConverter {
	//lint:ignore SA1019 passed through for drivers that still use it
	if cc, ok := s.inner.(driver.ColumnConverter); ok {
		return cc.ColumnConverter(idx)
	}
	return driver.DefaultParameterConverter
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
