package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testTimeout bounds every wait of a test; each ends by itself well within it.
const testTimeout = 30 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// fakeDSNs numbers fake DSNs, so that a test run again (-count) has DSNs of
// its own.
var fakeDSNs atomic.Int64

// fakeDSN returns a new DSN of the fake driver, naming the test.
func fakeDSN(t *testing.T) string {
	return fmt.Sprintf("fake:%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), fakeDSNs.Add(1))
}

// newFake returns a Connector of cfg over the fake driver, closed when the
// test ends, and the fake DSN.
func newFake(t *testing.T, cfg Config) (*Connector, string) {
	t.Helper()
	dsn := fakeDSN(t)
	cfg.DriverName, cfg.DSN = fakeName, dsn
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, dsn
}

// fakeDB returns a *sql.DB on a Connector of cfg over the fake driver.
func fakeDB(t *testing.T, cfg Config) (*sql.DB, *Connector, string) {
	t.Helper()
	c, dsn := newFake(t, cfg)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c, dsn
}

// connect makes one chaos connection of c, closed when the test ends.
func connect(t *testing.T, c *Connector) *conn {
	t.Helper()
	dc, err := c.Connect(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	return dc.(*conn)
}

func exec(ctx context.Context, cn *conn) error {
	_, err := cn.ExecContext(ctx, "UPDATE t", nil)
	return err
}

// flavored is a Connector of the fake driver that says it is fl's driver,
// so that chaos imitates fl's errors.
type flavored struct {
	dsn string
	drv driver.Driver
}

func (f flavored) Connect(context.Context) (driver.Conn, error) { return fakeDriver{}.Open(f.dsn) }
func (f flavored) Driver() driver.Driver                        { return f.drv }

// async runs fn in a goroutine and returns the channel of its error.
func async(fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	return done
}

func query(ctx context.Context, cn *conn) error {
	_, err := cn.QueryContext(ctx, "SELECT 1", nil)
	return err
}

// execN runs n Execs through db, each of which must succeed.
func execN(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	for range n {
		if _, err := db.ExecContext(ctxT(t), "UPDATE t"); err != nil {
			t.Fatal(err)
		}
	}
}
