package respool

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/chaos"
)

// rawOf runs f inside sql.Conn.Raw on a connection of db.
func rawOf(t *testing.T, db *sql.DB, f func(dc any) error) {
	t.Helper()
	sc, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Raw(f); err != nil {
		t.Fatal(err)
	}
}

// RawConn returns the real connection as the type asked for, through
// respool's connection and a wrapper with Unwrap() driver.Conn (chaos's),
// and names both types when the connection is not one.
func TestRawConn(t *testing.T) {
	m := newMock(t)
	fc := &faultConnector{m: m}
	cc, err := chaos.NewConnector(chaos.Config{Connector: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for name, base := range map[string]sqldriver.Connector{"direct": fc, "under chaos": cc} {
		t.Run(name, func(t *testing.T) {
			db, _ := openDB(t, Config{Connector: base})
			rawOf(t, db, func(dc any) error {
				rc, ok := dc.(*conn)
				if !ok {
					t.Fatalf("sql.Conn.Raw passed a %T, want respool's *conn", dc)
				}
				if _, direct := rc.Unwrap().(*faultConn); direct != (base == fc) {
					t.Fatalf("respool's connection holds a %T", rc.Unwrap())
				}
				got, err := RawConn[*faultConn](dc)
				if err != nil || got == nil || got != fc.conn(t, fc.made()) {
					t.Errorf("RawConn[*faultConn] = %v, %v; want the connection the Connector made", got, err)
				}
				if c, err := RawConn[sqldriver.Conn](dc); err != nil || c != sqldriver.Conn(got) {
					t.Errorf("RawConn[driver.Conn] = %T, %v; want the *faultConn", c, err)
				}
				_, err = RawConn[*pgx.Conn](dc)
				if err == nil || !strings.Contains(err.Error(), "*respool.faultConn") || !strings.Contains(err.Error(), "*pgx.Conn") {
					t.Errorf("RawConn[*pgx.Conn] of a *faultConn: %v; want an error naming both types", err)
				}
				return nil
			})
		})
	}
}

// What sql.Conn.Raw passes on a *sql.DB of the plain driver is returned
// as it is; for pgx, RawConn[*pgx.Conn] returns the *stdlib.Conn's Conn().
func TestRawConnOfAPlainDriver(t *testing.T) {
	plain := &faultConn{}
	if c, err := RawConn[*faultConn](plain); c != plain || err != nil {
		t.Errorf("RawConn[*faultConn] = %p, %v; want %p", c, err, plain)
	}
	if c, err := RawConn[sqldriver.Conn](plain); c != sqldriver.Conn(plain) || err != nil {
		t.Errorf("RawConn[driver.Conn] = %v, %v; want it as it is", c, err)
	}
	sc := &stdlib.Conn{}
	if c, err := RawConn[*stdlib.Conn](sc); c != sc || err != nil {
		t.Errorf("RawConn[*stdlib.Conn] = %p, %v; want %p", c, err, sc)
	}
	if c, err := RawConn[*pgx.Conn](sc); c != sc.Conn() || err != nil {
		t.Errorf("RawConn[*pgx.Conn] = %p, %v; want the *stdlib.Conn's Conn()", c, err)
	}
}

// A respool connection that holds no real connection (detached: not in use
// by database/sql) is an error, not a nil connection.
func TestRawConnOfADetachedConn(t *testing.T) {
	if c, err := RawConn[sqldriver.Conn](&conn{}); c != nil || err == nil {
		t.Errorf("RawConn of a detached conn = %v, %v; want an error", c, err)
	}
}
