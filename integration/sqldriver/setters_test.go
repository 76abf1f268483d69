package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// This file checks what the README and package respool say about
// database/sql's own settings under respool, on both servers, beside the
// plain driver where the difference is the point.

// sessionID returns the server's id of the session that runs the query.
func sessionID(t *testing.T, ctx context.Context, db *sql.DB, s *servers.Server) int64 {
	t.Helper()
	q := "SELECT CONNECTION_ID()"
	if s.Kind == servers.KindPostgres {
		q = "SELECT pg_backend_pid()"
	}
	var id int64
	if err := db.QueryRowContext(ctx, q).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// sessions runs n queries one after another and returns how many server
// sessions served them.
func sessions(t *testing.T, ctx context.Context, db *sql.DB, s *servers.Server, n int) int {
	t.Helper()
	seen := map[int64]bool{}
	for range n {
		seen[sessionID(t, ctx, db, s)] = true
	}
	return len(seen)
}

// SetMaxIdleConns, SetConnMaxLifetime and SetConnMaxIdleTime act on
// database/sql's shells, which hold no connection between uses: the
// physical connection, and with it the server session, is kept. With the
// plain driver each use then gets a new session.
func TestDatabaseSQLIdleSettersKeepThePhysicalConnection(t *testing.T) {
	const queries = 5
	for _, setter := range []struct {
		name string
		set  func(db *sql.DB)
	}{
		{"SetMaxIdleConns(-1)", func(db *sql.DB) { db.SetMaxIdleConns(-1) }},
		{"SetConnMaxLifetime(1ns)", func(db *sql.DB) { db.SetConnMaxLifetime(time.Nanosecond) }},
		{"SetConnMaxIdleTime(1ns)", func(db *sql.DB) { db.SetConnMaxIdleTime(time.Nanosecond) }},
	} {
		t.Run(setter.name, func(t *testing.T) {
			eachServer(t, func(t *testing.T, s *servers.Server) {
				ctx := ctxT(t)
				db, c := openDB(t, withKeys(s, "respool_max_conns=2"))
				setter.set(db)
				plain := openPlain(t, s, 2)
				setter.set(plain)
				if n := sessions(t, ctx, db, s, queries); n != 1 {
					t.Errorf("respool: %d server sessions served %d queries; want 1 (the setter acts on shells only)", n, queries)
				}
				if st := c.Stats(); st.Creates != 1 {
					t.Errorf("respool: %d connections made; want 1", st.Creates)
				}
				n := sessions(t, ctx, plain, s, queries)
				t.Logf("plain %s: %d sessions for %d queries; database/sql counted MaxIdleClosed %d, MaxLifetimeClosed %d, MaxIdleTimeClosed %d under respool",
					s.DriverName(), n, queries, db.Stats().MaxIdleClosed, db.Stats().MaxLifetimeClosed, db.Stats().MaxIdleTimeClosed)
			})
		})
	}
}

// respool_max_lifetime is the setting that ends physical connections.
func TestRespoolMaxLifetimeEndsPhysicalConnections(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c := openDB(t, withKeys(s, "respool_max_conns=1&respool_max_lifetime=1ms&respool_validation_interval=5ms"))
		first := sessionID(t, ctx, db, s)
		for sessionID(t, ctx, db, s) == first {
			if ctx.Err() != nil {
				t.Fatal("the session outlived respool_max_lifetime")
			}
		}
		if st := c.Stats(); st.Destroys.Lifetime == 0 {
			t.Errorf("Destroys.Lifetime = 0; want the expired connection counted")
		}
	})
}

// SetMaxOpenConns does limit the connections in use, but callers past it
// wait in database/sql's own queue: respool's queue does not see them
// (Stats().Waiting stays 0, respool_max_queue does not refuse them).
func TestSetMaxOpenConnsQueuesInDatabaseSQL(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c := openDB(t, withKeys(s, "respool_max_conns=2&respool_max_queue=1"))
		db.SetMaxOpenConns(1)
		held, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		before := c.Stats()
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err = db.QueryRowContext(short, "SELECT 1").Scan(new(int))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("query past SetMaxOpenConns(1): %v; want to wait in database/sql until its context ends", err)
		}
		st, ds := c.Stats(), db.Stats()
		if waits, cancelled := st.Waits-before.Waits, st.CancelledWaits-before.CancelledWaits; waits != 0 || cancelled != 0 || st.QueueFull != 0 || ds.WaitCount != 1 {
			t.Errorf("respool: %d waits, %d cancelled, QueueFull %d; database/sql WaitCount %d; want 0, 0, 0, 1",
				waits, cancelled, st.QueueFull, ds.WaitCount)
		}
	})
}

// sql.DB.Stats counts shells: idle shells hold no connection, in-use ones
// do. The pool's Stats count the physical connections.
func TestDBStatsCountShells(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db, c := openDB(t, withKeys(s, "respool_max_conns=3"))
		warm(t, ctx, db, 3)
		ds, st := db.Stats(), c.Stats()
		if ds.InUse != 0 || ds.Idle != 2 || st.Idle != 3 || st.Total != 3 {
			t.Errorf("database/sql: %d in use, %d idle; pool: %d idle of %d; want 0, 2 (database/sql's default idle list), 3, 3",
				ds.InUse, ds.Idle, st.Idle, st.Total)
		}
		held, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		if ds, st := db.Stats(), c.Stats(); ds.InUse != 1 || st.InUse != 1 {
			t.Errorf("holding one: database/sql %d in use, pool %d; want 1, 1", ds.InUse, st.InUse)
		}
	})
}
