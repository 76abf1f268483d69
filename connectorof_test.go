package respool

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	sqldriver "database/sql/driver"
)

// A *sql.DB from sql.Open("respool", dsn) reaches its Connector without a
// respool_name: the Quick start's Lookup("orders") returned nil (and its
// Stats() panicked) as soon as respool_name was left out of the DSN.
func TestSQLOpenAndConnectorOf(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.mock.ExpectClose() // by db.Close: the pool closes its connection
	db, err := sql.Open(driverName, m.dsn+"?respool_driver=sqlmock&respool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := queryInt(context.Background(), db, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	c, err := ConnectorOf(db)
	if err != nil || c == nil {
		t.Fatalf("ConnectorOf = %v, %v; want the Connector sql.Open made", c, err)
	}
	if s := c.Stats(); s.Creates != 1 || s.Total != 1 || s.MaxObjects != 1 || s.Takes < 1 {
		t.Errorf("Stats() = %+v; want the pool of the query: 1 created, 1 alive, max 1, ≥ 1 take", s)
	}
	if want := "respool(sqlmock)"; c.Name() != want {
		t.Errorf("Name() = %q, want %q", c.Name(), want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if again, err := ConnectorOf(db); again != c || err != nil { // a closed *sql.DB still has its Connector, for its last Stats
		t.Errorf("ConnectorOf after db.Close = %p, %v; want %p", again, err, c)
	}
	if err := c.pool.Close(context.Background()); err != nil { // db.Close does not wait for the connection's close
		t.Fatal(err)
	}
	m.met(t)
}

// Every way of making a *sql.DB on a respool Connector leads back to it.
func TestConnectorOfEveryWayIn(t *testing.T) {
	db, c, err := OpenDB("respool_driver=" + dsnTestDriverName)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := ConnectorOf(db); got != c || err != nil {
		t.Errorf("ConnectorOf(OpenDB's) = %p, %v; want OpenDB's Connector %p", got, err, c)
	}

	nc, err := NewConnector(Config{DriverName: dsnTestDriverName})
	if err != nil {
		t.Fatal(err)
	}
	ndb := sql.OpenDB(nc)
	defer ndb.Close()
	if got, err := ConnectorOf(ndb); got != nc || err != nil {
		t.Errorf("ConnectorOf(sql.OpenDB(NewConnector's)) = %p, %v; want %p", got, err, nc)
	}

	g, err := NewGroup(GroupConfig{MaxConns: 2, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close(context.Background()) }()
	a, err := g.Connector("a", Config{DriverName: dsnTestDriverName})
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Connector("b", Config{DriverName: dsnTestDriverName})
	if err != nil {
		t.Fatal(err)
	}
	adb, bdb := sql.OpenDB(a), sql.OpenDB(b)
	defer adb.Close()
	defer bdb.Close()
	if got, _ := ConnectorOf(adb); got != a {
		t.Errorf("ConnectorOf(member a's *sql.DB) = %p, want %p", got, a)
	}
	if got, _ := ConnectorOf(bdb); got != b {
		t.Errorf("ConnectorOf(member b's *sql.DB) = %p, want %p", got, b)
	}
}

// A *sql.DB of another driver, or nil, is an error naming what it is, never
// a nil Connector without an error.
func TestConnectorOfAnotherDriver(t *testing.T) {
	other, err := sql.Open(dsnTestDriverName, "")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := ConnectorOf(other)
	if c != nil || err == nil {
		t.Fatalf("ConnectorOf(a %s *sql.DB) = %v, %v; want an error", dsnTestDriverName, c, err)
	}
	if want := fmt.Sprintf("%T", other.Driver()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the driver %s", err, want)
	}
	if c, err := ConnectorOf(nil); c != nil || err == nil {
		t.Errorf("ConnectorOf(nil) = %v, %v; want an error", c, err)
	}
	bare := sql.OpenDB(unboundConnector{}) // respool's driver without a Connector
	defer bare.Close()
	if c, err := ConnectorOf(bare); c != nil || err == nil {
		t.Errorf("ConnectorOf(a *sql.DB whose driver is respool's unbound) = %v, %v; want an error", c, err)
	}
}

// What ConnectorOf returns shows no password, printed or in its Stats.
func TestConnectorOfHoldsNoPassword(t *testing.T) {
	db, err := sql.Open(driverName, "postgres://u:"+pwMark+"@127.0.0.1:1/db?respool_connect_rate=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := ConnectorOf(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.pool.Close(context.Background()); err != nil { // the pool's goroutines, which fmt would race with, have ended
		t.Fatal(err)
	}
	for _, s := range []string{c.Name(), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c.pool), fmt.Sprintf("%+v", c.Stats())} {
		if hasMark(s) {
			t.Errorf("the Connector shows the password: %s", s)
		}
	}
}

// unboundConnector's Driver is respool's as registered, bound to no
// Connector.
type unboundConnector struct{ dsnTestConnector }

func (unboundConnector) Driver() sqldriver.Driver { return sqlDriver{} }
