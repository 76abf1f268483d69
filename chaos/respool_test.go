package chaos_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/respool/respool"
	"github.com/respool/respool/chaos"
)

// TestUnderRespool: respool's driver wraps chaos by name; the faults reach
// respool's caller as the wrapped driver's errors, and the Connector
// database/sql made is found by ConnectorOf.
func TestUnderRespool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("respool", "fake:under-respool?respool_driver=chaos"+
		"&chaos_driver=chaos-test-fake&chaos_name=TestUnderRespool"+
		"&chaos_error=mysql:1213&chaos_error_every=2&chaos_drop_every=3")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var deadlocks int
	for range 6 {
		_, err := db.ExecContext(ctx, "UPDATE t")
		switch e := err.(type) {
		case nil:
		case *mysql.MySQLError: // a type assertion, as mysql's users write it
			if e.Number != 1213 {
				t.Fatal(err)
			}
			deadlocks++
		default:
			t.Fatalf("%T %v", err, err)
		}
	}
	s := chaos.Lookup("TestUnderRespool").Stats()
	if deadlocks != int(s.Faults["error"].Injected) || deadlocks == 0 || s.Faults["drop"].Injected == 0 {
		t.Errorf("%d deadlocks seen; Stats %+v", deadlocks, s)
	}
	// database/sql retried the drops (driver.ErrBadConn) on other
	// connections, which respool's pool made.
	c, err := respool.ConnectorOf(db)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Creates < 2 {
		t.Errorf("respool made %d connections; want one more per drop", st.Creates)
	}
}
