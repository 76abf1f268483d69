package respool

import (
	"database/sql/driver"
	"io"
	"reflect"

	"github.com/respool/respool/pool"
)

// rows is the real driver's rows, holding the pool's Handle of their
// connection while they are open, so that a *sql.Rows dropped without Close
// is found by the garbage collector.
//
// database/sql keeps every connection it has open reachable (DB.dep), so a
// Handle held by a conn is never lost. While rows are open, the Handle (and
// with it the pool's leak token) is held here instead: the *sql.Rows the
// user holds is the only path to it. If the user drops the *sql.Rows, the
// pool reclaims the connection as leaked (LEAK-DETECTED, with where it was
// taken), closes it and frees its slot. Close hands the Handle back to the
// conn before database/sql gives the conn back.
//
// A *sql.Rows whose context can be cancelled is also held by database/sql's
// goroutine watching that context, which closes it when the context ends; a
// query with a Background context is the case left to the collector.
type rows struct {
	c     *conn
	pc    *physConn // the connection the rows are read from
	inner driver.Rows
	h     pool.Handle[driver.Conn] // valid while the rows hold it (see conn.lend)
}

var (
	_ driver.Rows                           = (*rows)(nil)
	_ driver.RowsNextResultSet              = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeLength           = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*rows)(nil)
)

func (r *rows) Columns() []string { return r.inner.Columns() }

// Next reads without the conn's guard: rows being read are reachable, so
// the Handle they hold cannot be reclaimed meanwhile.
func (r *rows) Next(dest []driver.Value) error { return r.inner.Next(dest) }

// Close closes the real rows and hands the Handle back to the conn, or, if
// the conn no longer has the connection (it was released while the rows
// were open, which database/sql does not do), gives it back to the pool.
func (r *rows) Close() error {
	c := r.c
	locked := c.lock()
	defer c.unlock(locked)
	err := r.inner.Close()
	if r.h == (pool.Handle[driver.Conn]{}) {
		return c.check(err)
	}
	h := r.h
	r.h = pool.Handle[driver.Conn]{}
	if c.pc == r.pc && !c.reclaimed {
		c.h = h
		c.lent.Store(false)
		return c.check(err)
	}
	if err != nil && isBadConn(err) {
		_ = h.Discard()
	} else {
		_ = h.GiveBack()
	}
	return err
}

func (r *rows) HasNextResultSet() bool {
	if nr, ok := r.inner.(driver.RowsNextResultSet); ok {
		return nr.HasNextResultSet()
	}
	return false
}

func (r *rows) NextResultSet() error {
	if nr, ok := r.inner.(driver.RowsNextResultSet); ok {
		return nr.NextResultSet()
	}
	return io.EOF
}

// The column type methods answer as database/sql does for rows without them.

func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	if ct, ok := r.inner.(driver.RowsColumnTypeScanType); ok {
		return ct.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string {
	if ct, ok := r.inner.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return ct.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *rows) ColumnTypeLength(i int) (int64, bool) {
	if ct, ok := r.inner.(driver.RowsColumnTypeLength); ok {
		return ct.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *rows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if ct, ok := r.inner.(driver.RowsColumnTypeNullable); ok {
		return ct.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *rows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if ct, ok := r.inner.(driver.RowsColumnTypePrecisionScale); ok {
		return ct.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
