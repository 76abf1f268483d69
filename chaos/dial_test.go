package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/resilience/dbclass"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

const testPassword = "s3cret-pw"

// realDSN returns a DSN of driverName (pgx or mysql) for addr.
func realDSN(driverName, addr string) string {
	if driverName == "pgx" {
		return "postgres://app:" + testPassword + "@" + addr + "/app?sslmode=disable"
	}
	return "app:" + testPassword + "@tcp(" + addr + ")/app"
}

// connectErr opens driverName's DSN for addr under chaos with faults and
// returns the error of a ping, made with ctx.
func connectErr(t *testing.T, ctx context.Context, driverName, addr string, faults ...Fault) error {
	t.Helper()
	c, err := NewConnector(Config{DriverName: driverName, DSN: realDSN(driverName, addr), Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	return db.PingContext(ctx)
}

// chain shows every error of err's chain with its type.
func chain(err error) string {
	var parts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		parts = append(parts, fmt.Sprintf("%T", e))
	}
	return strings.Join(parts, " > ")
}

// TestRefuseAsTheDriver: an injected refusal is, type for type and class
// for class, the driver's error for a closed port.
func TestRefuseAsTheDriver(t *testing.T) {
	for _, name := range []string{"pgx", "mysql"} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			addr := closedPort(t)
			real := connectErr(t, ctx, name, addr)
			injected := connectErr(t, ctx, name, "127.0.0.1:1", Fault{Kind: KindRefuse})
			if chain(real) != chain(injected) {
				t.Errorf("real %s\ninjected %s", chain(real), chain(injected))
			}
			if !errors.Is(injected, syscall.ECONNREFUSED) {
				t.Errorf("%v: not ECONNREFUSED", injected)
			}
			if rc, ic := dbclass.Classify(real), dbclass.Classify(injected); rc != ic {
				t.Errorf("real %q: %v; injected %q: %v", real, rc, injected, ic)
			}
			want := strings.Replace(real.Error(), addr, "127.0.0.1:1", -1)
			if injected.Error() != want {
				t.Errorf("injected %q\nwant     %q", injected, want)
			}
		})
	}
}

// TestConnectErrorAsTheDriver: a server error at connect reaches the caller
// as the driver returns a real one, from a stand-in server.
func TestConnectErrorAsTheDriver(t *testing.T) {
	for _, tc := range []struct {
		driver  string
		err     error
		class   dbclass.Class
		chain   string
		sslmode string
	}{
		{"pgx", PgError("53300"), dbclass.ClassBackPressure, "*pgconn.ConnectError > *errors.joinError", "disable"},
		{"pgx", PgError("57P03"), dbclass.ClassBackPressure, "*pgconn.ConnectError > *errors.joinError", "prefer"},
		{"pgx", PgError("28P01"), dbclass.ClassCaller, "*pgconn.ConnectError > *errors.joinError", "prefer"},
		{"mysql", MySQLError(1040), dbclass.ClassBackPressure, "*mysql.MySQLError", ""},
		{"mysql", MySQLError(1045), dbclass.ClassCaller, "*mysql.MySQLError", ""},
	} {
		t.Run(fmt.Sprintf("%s %v %s", tc.driver, tc.err, tc.sslmode), func(t *testing.T) {
			dsn := realDSN(tc.driver, "127.0.0.1:1")
			if tc.sslmode != "" {
				dsn = strings.Replace(dsn, "sslmode=disable", "sslmode="+tc.sslmode, 1)
			}
			c, err := NewConnector(Config{DriverName: tc.driver, DSN: dsn,
				Faults: []Fault{{Kind: KindError, On: OpConnect, Err: tc.err}}})
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			err = db.PingContext(ctxT(t))
			if got := chain(err); got != tc.chain {
				t.Errorf("chain %s, want %s", got, tc.chain)
			}
			if v := dbclass.Classify(err); v.Class != tc.class {
				t.Errorf("%q: %v, want %v", err, v, tc.class)
			}
			var pgErr *pgconn.PgError
			var myErr *mysql.MySQLError
			switch want := tc.err.(type) {
			case *pgconn.PgError:
				if !errors.As(err, &pgErr) || *pgErr != *want {
					t.Errorf("PgError %+v, want %+v", pgErr, want)
				}
			case *mysql.MySQLError:
				if !errors.As(err, &myErr) || myErr.Number != want.Number || myErr.Message != want.Message {
					t.Errorf("MySQLError %+v, want %+v", myErr, want)
				}
				if myErr.SQLState != want.SQLState {
					t.Errorf("SQLSTATE %q, want %q", myErr.SQLState, want.SQLState)
				}
			}
			if strings.Contains(err.Error(), testPassword) {
				t.Errorf("%q shows the password", err)
			}
		})
	}
}

// TestConnectFreezeAsTheDriver: a connection attempt to a server that never
// answers ends with the context, with the driver's error for it.
func TestConnectFreezeAsTheDriver(t *testing.T) {
	for _, tc := range []struct {
		driver string
		class  dbclass.Class
		chain  string
	}{
		// As measured against a real frozen server (integration/chaos).
		{"pgx", dbclass.ClassConnection, "*pgconn.ConnectError > *errors.joinError"},
		{"mysql", dbclass.ClassAmbiguous, "context.deadlineExceededError"},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
			defer cancel()
			err := connectErr(t, ctx, tc.driver, "127.0.0.1:1", Fault{Kind: KindFreeze, On: OpConnect})
			v := dbclass.Classify(err)
			if got := chain(err); got != tc.chain || v.Class != tc.class || !v.Timeout {
				t.Errorf("%q: %s, %v; want %s, %v with Timeout", err, got, v, tc.chain, tc.class)
			}
		})
	}
}

// TestConnectFreezeEndsWithClose: a stand-in server that never answers is
// closed with its Connector, so a connection attempt without a deadline
// ends.
func TestConnectFreezeEndsWithClose(t *testing.T) {
	for _, name := range []string{"pgx", "mysql"} {
		t.Run(name, func(t *testing.T) {
			frozen := make(chan struct{}, 1)
			c, err := NewConnector(Config{DriverName: name, DSN: realDSN(name, "127.0.0.1:1"),
				Faults: []Fault{{Kind: KindFreeze, On: OpConnect}}, OnFault: func(Event) { frozen <- struct{}{} }})
			if err != nil {
				t.Fatal(err)
			}
			done := async(func() error {
				_, err := c.Connect(context.Background())
				return err
			})
			<-frozen
			// The attempt is in the driver now, or about to be: a stand-in
			// made after Close is closed at once.
			c.Close()
			if err := <-done; err == nil {
				t.Fatal("connected to a frozen server")
			} else {
				t.Logf("%q", err)
			}
		})
	}
}

// TestConnectLatency: a connection attempt waits the delay first.
func TestConnectLatencyThenRealDial(t *testing.T) {
	addr := closedPort(t)
	c, err := NewConnector(Config{DriverName: "pgx", DSN: realDSN("pgx", addr),
		Faults: []Fault{{Kind: KindLatency, On: OpConnect, Latency: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(ctxT(t)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want the real dial's refusal", err)
	}
	if s := c.Stats(); s.Faults["latency"].Latency != time.Millisecond {
		t.Errorf("Stats %+v", s)
	}
}
