package faults

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// teardownRows is the size of the transaction TestServerCountsASessionItTearsDown
// has rolled back: a rollback of a second or so, far longer than the
// moments the test needs.
const teardownRows = 100_000

// TestServerCountsASessionItTearsDown is why the session checks count, on
// MariaDB, the sessions the server holds open rather than its own count of
// sessions. MariaDB closes a session's socket first, then tears the session
// down (close_connection, then unlink_thd in do_handle_one_connection):
// it rolls back the session's transaction and only then drops it from
// Threads_connected, Max_used_connections and the count that max_connections
// limits. respool frees the slot of a closed connection once the server has
// closed its socket (Config.SessionEndWait), and 5 ms later, the teardown
// of an idle session; a connection made then is counted beside a session
// whose teardown takes longer. Here a transaction that updated teardownRows
// rows is cut by its statement's deadline: with a pool of one, the server
// holds one session open, and counts two while it rolls the other back.
func TestServerCountsASessionItTearsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(suiteCtx, time.Minute)
	defer cancel()
	s := setOf(t, servers.KindMariaDB).main
	admin := openAdmin(t, s, false)
	plain, err := sql.Open("mysql", s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plain.SetMaxIdleConns(0) // its session is not one of those counted below
	for _, q := range []string{
		"DROP TABLE IF EXISTS teardown_rows",
		"CREATE TABLE teardown_rows (id INT PRIMARY KEY, pad CHAR(100)) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO teardown_rows SELECT seq, 'x' FROM seq_1_to_%d", teardownRows),
	} {
		if _, err := plain.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	defer func() { _, _ = plain.ExecContext(suiteCtx, "DROP TABLE IF EXISTS teardown_rows") }()

	cfg, err := respool.ParseDSN(s.DSN() + "&respool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE teardown_rows SET pad = 'y'"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = tx.ExecContext(short, "DO SLEEP(1)")
	cancelShort()
	if err == nil {
		t.Fatal("DO SLEEP(1) with a 100ms deadline succeeded")
	}
	_ = tx.Rollback() // its connection is gone: the server rolls back as it ends the session

	// The pool's one slot comes back once the server has closed the old
	// session's socket (after the sleep); the rollback runs on.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	counted, err := s.CountConnections(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	open, err := countOpen(ctx, s, admin)
	if err != nil {
		t.Fatal(err)
	}
	var tearingDown int
	if err := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.processlist
		WHERE user = ? AND command = 'Killed' AND state = 'Rollback'`, s.User).Scan(&tearingDown); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	t.Logf("a pool of 1: the server holds %d session(s) open, counts %d, rolls back %d it disconnected", open, counted, tearingDown)
	if open != 1 {
		t.Errorf("the server holds %d sessions open for a pool of 1; want 1", open)
	}
	if tearingDown != 1 || counted != 2 {
		t.Errorf("the server counts %d sessions, %d of them rolled back after their socket closed; want 2 and 1: "+
			"the rollback ended before the replacement was counted (make teardownRows larger?)", counted, tearingDown)
	}
	if err := db.Close(); err != nil {
		t.Error(err)
	}
	if err := waitDrained(ctx, s, admin); err != nil {
		t.Fatal(err)
	}
}

// setOf returns the suite's servers of kind.
func setOf(t *testing.T, kind string) *serverSet {
	t.Helper()
	for _, set := range sets {
		if set.kind == kind {
			return set
		}
	}
	t.Fatalf("no %s server in the suite", kind)
	return nil
}
