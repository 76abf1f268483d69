package respool

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"io"
	"testing"

	"github.com/respool/respool/pool"
)

// This file measures the CPU respool adds to a query through database/sql,
// on an in-memory driver whose queries cost next to nothing, so that what
// remains is database/sql's and respool's own work. The benchmarks against
// real servers are in integration/sqldriver.

// memConnector makes memConns.
type memConnector struct{}

func (memConnector) Connect(context.Context) (sqldriver.Conn, error) { return &memConn{}, nil }
func (memConnector) Driver() sqldriver.Driver                        { return memDriver{} }

type memDriver struct{}

func (memDriver) Open(string) (sqldriver.Conn, error) { return &memConn{}, nil }

// memConn answers every query with one row holding 1, at once.
type memConn struct{}

func (*memConn) Prepare(string) (sqldriver.Stmt, error)      { return nil, io.EOF }
func (*memConn) Close() error                                { return nil }
func (*memConn) Begin() (sqldriver.Tx, error)                { return nil, io.EOF }
func (*memConn) ResetSession(context.Context) error          { return nil }
func (*memConn) IsValid() bool                               { return true }
func (*memConn) CheckNamedValue(*sqldriver.NamedValue) error { return nil }
func (*memConn) QueryContext(context.Context, string, []sqldriver.NamedValue) (sqldriver.Rows, error) {
	return &memRows{}, nil
}

type memRows struct{ done bool }

func (*memRows) Columns() []string { return []string{"n"} }
func (*memRows) Close() error      { return nil }
func (r *memRows) Next(dest []sqldriver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

// BenchmarkQueryOverhead runs db.QueryRowContext(…).Scan serially on the
// in-memory driver: plainly through database/sql, through respool with its
// defaults, and through respool recording leak stacks. The differences are
// respool's cost per query, and that of the stacks.
func BenchmarkQueryOverhead(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		open func(b *testing.B) *sql.DB
	}{
		{"plain", func(*testing.B) *sql.DB { return sql.OpenDB(memConnector{}) }},
		{"respool", func(b *testing.B) *sql.DB {
			db, _ := openDB(b, Config{Connector: memConnector{}, Pool: pool.Config{MaxObjects: 4}})
			return db
		}},
		{"respool-stack", func(b *testing.B) *sql.DB {
			db, _ := openDB(b, Config{Connector: memConnector{}, Pool: pool.Config{MaxObjects: 4, LeakCaptureStack: true}})
			return db
		}},
	} {
		b.Run("pool="+tc.name, func(b *testing.B) {
			db := tc.open(b)
			defer db.Close()
			b.ReportAllocs()
			for b.Loop() {
				var n int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
