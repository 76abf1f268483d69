package servers

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/respool/respool/pool"
)

// OpenDB opens a plain database/sql pool on dsn with the driver
// driverName, closed when the test ends.
func OpenDB(t testing.TB, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Pinned returns one connection of db, closed when the test ends.
func Pinned(t testing.TB, ctx context.Context, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// MustExec runs queries on e in order and fails the test at the first
// error.
func MustExec(t testing.TB, ctx context.Context, e interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := e.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// WaitFor polls cond every 10 ms until it holds, and fails the test when
// cond errs or ctx ends first. It is for a state the server reaches on its
// own (a statement running, a session gone), which no channel can signal.
func WaitFor(t testing.TB, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	if err := pollUntil(ctx, 10*time.Millisecond, "waiting for "+what, func(context.Context) (bool, error) { return cond() }); err != nil {
		t.Fatal(err)
	}
}

// ClosedAddr returns a loopback host:port nothing listens on.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// AdminConn returns a connection, closed when the test ends, of a user of
// s who may change its global settings and users: AdminDSN's user, or for
// MariaDB, when AdminDSN is "" or refused, root over TCP (see adminDSNs).
func AdminConn(t testing.TB, ctx context.Context, s *Server) *sql.Conn {
	t.Helper()
	var errs []error
	for _, dsn := range s.adminDSNs() {
		c, err := OpenDB(t, s.DriverName(), dsn).Conn(ctx)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		errs = append(errs, err)
	}
	t.Fatalf("no administrator's connection to %s: %v", s.Kind, errors.Join(errs...))
	return nil
}

// AcquireSlots takes n slots of a shared budget b, failing the test if one
// is refused, and returns the funcs that give them back.
func AcquireSlots(t testing.TB, b pool.Budget, n int) []func() {
	t.Helper()
	var releases []func()
	for range n {
		r, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	return releases
}
