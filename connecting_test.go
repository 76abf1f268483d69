package respool

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// hungServer listens on a loopback port and runs serve on each connection
// it accepts, in a goroutine of its own; serve returns when it has nothing
// more to say, and the connection stays open, unanswered, until the test
// ends. It returns the address.
func hungServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn // guarded by mu
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if serve != nil {
					serve(c)
				}
				_, _ = io.Copy(io.Discard, c) // read what the client sends, never answer
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// pgAuthAsked reads PostgreSQL's startup message and asks for a cleartext
// password: the client answers and waits for the verdict.
func pgAuthAsked(c net.Conn) {
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return
	}
	if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(n[:]))-4); err != nil {
		return
	}
	_, _ = c.Write([]byte{'R', 0, 0, 0, 8, 0, 0, 0, 3}) // AuthenticationCleartextPassword
}

// pgTLSAccepted reads PostgreSQL's SSLRequest and accepts it: the client
// starts its TLS handshake, which the server never answers.
func pgTLSAccepted(c net.Conn) {
	var req [8]byte
	if _, err := io.ReadFull(c, req[:]); err == nil {
		_, _ = c.Write([]byte{'S'})
	}
}

// mysqlGreeting returns a server that sends a MySQL greeting (HandshakeV10,
// mysql_native_password) offering TLS or not: the client answers with its
// SSL request and starts TLS, or with its handshake response, and waits.
func mysqlGreeting(tls bool) func(net.Conn) {
	return func(c net.Conn) {
		const (
			protocol41, ssl, secureConn, pluginAuth = 1 << 9, 1 << 11, 1 << 15, 1 << 19
			longPassword, connectWithDB             = 1, 1 << 3
		)
		caps := uint32(longPassword | connectWithDB | protocol41 | secureConn | pluginAuth)
		if tls {
			caps |= ssl
		}
		p := []byte{10}
		p = append(p, "8.0.36-hung\x00"...)
		p = append(p, 1, 0, 0, 0)    // connection id
		p = append(p, "abcdefgh"...) // auth-plugin-data-part-1
		p = append(p, 0)             // filler
		p = binary.LittleEndian.AppendUint16(p, uint16(caps))
		p = append(p, 33, 2, 0) // charset, status
		p = binary.LittleEndian.AppendUint16(p, uint16(caps>>16))
		p = append(p, 21)                    // auth-plugin-data length
		p = append(p, make([]byte, 10)...)   // reserved
		p = append(p, "ijklmnopqrst\x00"...) // auth-plugin-data-part-2
		p = append(p, "mysql_native_password\x00"...)
		h := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}
		_, _ = c.Write(append(h, p...))
	}
}

// hungCase is a server that hangs a connection attempt in one phase, and
// the DSNs that reach it through respool and through the plain driver.
type hungCase struct {
	name, phase string
	addr        string
	driver      string // the plain driver's name
	plainDSN    string // the DSN without respool's keys
}

func pgHung(name, phase, addr, sslmode string) hungCase {
	return hungCase{name: name, phase: phase, addr: addr, driver: "pgx",
		plainDSN: "postgres://app:" + pwMark + "@" + addr + "/app?sslmode=" + sslmode}
}

func mysqlHung(name, phase, addr, tls string) hungCase {
	return hungCase{name: name, phase: phase, addr: addr, driver: "mysql",
		plainDSN: "app:" + pwMark + "@tcp(" + addr + ")/app?tls=" + tls}
}

// hungCases returns the attempts that hang, one a phase and driver, on
// loopback servers that live until the test ends.
func hungCases(t *testing.T) []hungCase {
	silent := hungServer(t, nil)
	cases := []hungCase{
		pgHung("pgx/startup", "startup", silent, "disable"),
		pgHung("pgx/TLS", "TLS", hungServer(t, pgTLSAccepted), "require"),
		pgHung("pgx/auth", "auth", hungServer(t, pgAuthAsked), "disable"),
		mysqlHung("mysql/startup", "startup", silent, "false"),
		mysqlHung("mysql/TLS", "TLS", hungServer(t, mysqlGreeting(true)), "skip-verify"),
		mysqlHung("mysql/auth", "auth", hungServer(t, mysqlGreeting(false)), "false"),
	}
	if addr, ok := unacceptedAddr(t); ok {
		cases = append(cases, pgHung("pgx/dial", "dial", addr, "disable"), mysqlHung("mysql/dial", "dial", addr, "false"))
	}
	return cases
}

// checkHungError checks the error of a wait for a connection whose attempt
// hung in c's phase: it matches want, names the address and the phase (a
// *ConnectPhaseError) and does not show the password.
func checkHungError(t *testing.T, c hungCase, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("got %v; want errors.Is %v", err, want)
	}
	if err == nil {
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, c.addr) || !strings.Contains(msg, c.phase+" phase") {
		t.Errorf("error %q: want the address %s and the phase %q named", msg, c.addr, c.phase)
	}
	var pe *ConnectPhaseError
	if !errors.As(err, &pe) || pe.Addr != c.addr || pe.Phase != c.phase {
		t.Errorf("error %q (%T): want a *ConnectPhaseError with Addr %s, Phase %q", msg, err, c.addr, c.phase)
	}
	if hasMark(msg) {
		t.Errorf("error %q shows the password", msg)
	}
}

// pingWithin pings a new *sql.DB of driverName and dsn within d, and
// returns the error.
func pingWithin(t *testing.T, driverName, dsn string, d time.Duration) error {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return db.PingContext(ctx)
}

// A connection attempt that hangs (a server that accepts and never
// answers, one that never completes TLS or authentication, a listener whose
// accept queue is full) ends a caller's wait at its deadline with an error
// that still matches context.DeadlineExceeded and names the address and
// the phase the attempt was in; respool said "context deadline exceeded"
// and nothing else. The plain driver's error is logged beside it, and
// pgconn.Timeout says of both the same (true for pgx).
func TestHungConnectNamesAddressAndPhase(t *testing.T) {
	for _, c := range hungCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const wait = 500 * time.Millisecond
			err := pingWithin(t, "respool", c.plainDSN+"&respool_log=off", wait)
			checkHungError(t, c, err, context.DeadlineExceeded)
			plain := pingWithin(t, c.driver, c.plainDSN, wait)
			if pgconn.Timeout(err) != pgconn.Timeout(plain) {
				t.Errorf("pgconn.Timeout: respool %v, plain %s %v; want the same", pgconn.Timeout(err), c.driver, pgconn.Timeout(plain))
			}
			t.Logf("respool: %v\nplain %s: %v", err, c.driver, plain)
		})
	}
}

// A connection attempt that the pool gives up on (Pool.CreateTimeout) or
// that the driver ends (pgx's connect_timeout) before the caller's deadline
// fails with an error naming the address and the phase; pgx's own error is
// still there (errors.As, pgconn.Timeout).
func TestHungConnectGivenUpOnNamesAddressAndPhase(t *testing.T) {
	pgStartup := pgHung("pgx/startup", "startup", hungServer(t, nil), "disable")
	mysqlAuth := mysqlHung("mysql/auth", "auth", hungServer(t, mysqlGreeting(false)), "false")
	for _, tc := range []struct {
		name string
		c    hungCase
		keys string
		pgx  bool // the error is pgx's own, wrapped
	}{
		{"pgx/create_timeout", pgStartup, "&respool_create_timeout=300ms", false},
		{"pgx/connect_timeout", pgStartup, "&connect_timeout=1", true},
		{"mysql/create_timeout", mysqlAuth, "&respool_create_timeout=300ms", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := pingWithin(t, "respool", tc.c.plainDSN+tc.keys+"&respool_log=off&respool_retry_connect=1", 10*time.Second)
			checkHungError(t, tc.c, err, context.DeadlineExceeded)
			if tc.pgx {
				var ce *pgconn.ConnectError
				if !errors.As(err, &ce) || !pgconn.Timeout(err) {
					t.Errorf("%v: want pgx's *pgconn.ConnectError, pgconn.Timeout true", err)
				}
			}
			t.Logf("respool: %v", err)
		})
	}
}
