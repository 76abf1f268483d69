package sqldriver

import (
	"context"
	"database/sql"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

type dialKey struct{}

// dialed is what a dialer registered with go-sql-driver/mysql saw.
type dialed struct {
	value    any
	deadline time.Time
	ok       bool // a deadline was set
}

// TestCallersContextReachesTheDial checks that a dialer registered with
// mysql.RegisterDialContext sees the values of the context of the query that
// made the connection, through the plain driver and through respool. respool
// makes connections in the pool, for whichever caller waits longest, so
// creation outlives the caller (context.WithoutCancel): its deadline is
// CreateTimeout from the start of creation, not the caller's.
func TestCallersContextReachesTheDial(t *testing.T) {
	const network = "respool-test-dial"
	seen := make(chan dialed, 16)
	mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
		d, ok := ctx.Deadline()
		seen <- dialed{value: ctx.Value(dialKey{}), deadline: d, ok: ok}
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", addr)
	})
	cfg, err := mysql.ParseDSN(maria.MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net = network
	dsn := cfg.FormatDSN()
	const callerTimeout, createTimeout = 3 * time.Second, 7 * time.Second

	query := func(t *testing.T, db *sql.DB) dialed {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.WithValue(ctxT(t), dialKey{}, "caller"), callerTimeout)
		defer cancel()
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-seen:
			return d
		default:
			t.Fatal("the dialer was not called")
			return dialed{}
		}
	}

	t.Run("mysql", func(t *testing.T) {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		d := query(t, db)
		if left := time.Until(d.deadline); d.value != "caller" || !d.ok || left > callerTimeout {
			t.Errorf("plain mysql's dialer saw value %v, deadline in %v (set: %v); want the caller's", d.value, left, d.ok)
		}
	})
	t.Run("respool", func(t *testing.T) {
		db, err := sql.Open("respool", dsn+"&respool_max_conns=1&respool_create_timeout="+createTimeout.String())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		d := query(t, db)
		if left := time.Until(d.deadline); !d.ok || left > createTimeout {
			t.Errorf("respool's dialer saw a deadline in %v (set: %v); want at most CreateTimeout, %v", left, d.ok, createTimeout)
		}
		if d.value != "caller" {
			t.Errorf("respool's dialer saw value %v; want the caller's (creation runs under context.WithoutCancel of the caller's context)", d.value)
		}
	})
}
