package respool_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
)

// DBStats shows the physical connections where sql.DB.Stats shows
// database/sql's handles: a connection kept open by the pool while no
// handle holds it is open and idle in DBStats. The Observer set through
// the Connector (and its health Source) is told of each take and hold.
func TestConnectorDBStatsAndObserve(t *testing.T) {
	const dsn = "connector-dbstats"
	mock, m, err := sqlmock.NewWithDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	m.ExpectPing()
	c, err := respool.NewConnector(respool.Config{DriverName: "sqlmock", DSN: dsn,
		Pool: pool.Config{Name: "orders", MaxObjects: 3, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	var waits, uses atomic.Int64
	src := health.FromConnector(c, db.PingContext)
	if src.Observe == nil {
		t.Fatal("health.FromConnector offers no Observe for a *Connector")
	}
	src.Observe(&pool.Observer{Wait: func(time.Duration) { waits.Add(1) }, Use: func(time.Duration) { uses.Add(1) }})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	got := c.DBStats()
	if got.MaxOpenConnections != 3 || got.OpenConnections != 1 || got.InUse != 1 || got.Idle != 0 {
		t.Errorf("DBStats with a connection in use = %+v; want max 3, open 1, in use 1, idle 0", got)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	got = c.DBStats()
	if got.OpenConnections != 1 || got.InUse != 0 || got.Idle != 1 {
		t.Errorf("DBStats after the handle closed = %+v; want open 1, in use 0, idle 1", got)
	}
	if waits.Load() != 1 || uses.Load() != 1 {
		t.Errorf("Observer told of %d waits, %d holds; want 1, 1", waits.Load(), uses.Load())
	}
	if err := c.Resize(2, 0); err != nil {
		t.Fatal(err)
	}
	if got := c.DBStats(); got.MaxOpenConnections != 2 {
		t.Errorf("DBStats after Resize(2, 0): MaxOpenConnections %d; want 2", got.MaxOpenConnections)
	}
}
