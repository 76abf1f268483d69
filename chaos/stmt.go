package chaos

import (
	"context"
	"database/sql/driver"
)

// stmt is a prepared statement of the wrapped driver whose Exec and Query
// meet the Faults (OpExec, OpQuery) of its connection.
type stmt struct {
	cn    *conn
	real  driver.Stmt
	query string
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

func (s *stmt) Close() error  { return s.real.Close() }
func (s *stmt) NumInput() int { return s.real.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return do(s.cn, ctx, OpExec, s.query, func(ctx context.Context) (driver.Result, error) {
		if e, ok := s.real.(driver.StmtExecContext); ok {
			return e.ExecContext(ctx, args)
		}
		vs, err := values(ctx, args)
		if err != nil {
			return nil, err
		}
		//lint:ignore SA1019 the wrapped driver has nothing else
		return s.real.Exec(vs)
	}, nil)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return do(s.cn, ctx, OpQuery, s.query, func(ctx context.Context) (driver.Rows, error) {
		if q, ok := s.real.(driver.StmtQueryContext); ok {
			return q.QueryContext(ctx, args)
		}
		vs, err := values(ctx, args)
		if err != nil {
			return nil, err
		}
		//lint:ignore SA1019 the wrapped driver has nothing else
		return s.real.Query(vs)
	}, closeRows)
}

// CheckNamedValue asks the wrapped statement, then its connection, as
// database/sql would ask them without chaos.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := s.real.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return s.cn.CheckNamedValue(nv)
}

func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv
}

// tx is a transaction of the wrapped driver whose Commit and Rollback meet
// the Faults (OpCommit, OpRollback) of its connection, under the context
// the transaction began with (driver.Tx's methods take none).
type tx struct {
	cn   *conn
	real driver.Tx
	ctx  context.Context
}

func (t *tx) Commit() error {
	_, err := do(t.cn, t.ctx, OpCommit, "", func(context.Context) (struct{}, error) { return struct{}{}, t.real.Commit() }, nil)
	return err
}

func (t *tx) Rollback() error {
	_, err := do(t.cn, t.ctx, OpRollback, "", func(context.Context) (struct{}, error) { return struct{}{}, t.real.Rollback() }, nil)
	return err
}
