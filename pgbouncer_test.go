package respool

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestPgBouncerKey: respool_pgbouncer reads off, session and transaction
// in any case, stores off as "", and reads back from FormatDSN and String.
func TestPgBouncerKey(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"transaction", "transaction"},
		{"TRANSACTION", "transaction"},
		{"session", "session"},
		{"Off", ""},
		{"off", ""},
	} {
		dsn := "postgres://u:pw@h/db?respool_pgbouncer=" + tt.value
		c, err := ParseDSN(dsn)
		if err != nil {
			t.Fatalf("%s: %v", tt.value, err)
		}
		if c.PgBouncer != tt.want || c.DSN != "postgres://u:pw@h/db" {
			t.Errorf("%s: PgBouncer %q DSN %q; want %q and the DSN without the key", tt.value, c.PgBouncer, c.DSN, tt.want)
		}
		checkRoundTrip(t, dsn)
		if s := c.String(); tt.want != "" && !strings.Contains(s, "respool_pgbouncer="+tt.want) || strings.Contains(s, "pw") {
			t.Errorf("%s: String() = %s; want respool_pgbouncer=%s and no password", tt.value, s, tt.want)
		}
	}
}

// TestPgBouncerKeyRefusals: a bad value, a MySQL DSN and init SQL in
// transaction mode are *DSNErrors naming the key at fault, its value and
// what is accepted.
func TestPgBouncerKeyRefusals(t *testing.T) {
	for _, tt := range []struct{ dsn, key, value, accepted string }{
		{"postgres://h/db?respool_pgbouncer=statement", "respool_pgbouncer", "statement", "off, session or transaction"},
		{"postgres://h/db?respool_pgbouncer=", "respool_pgbouncer", "", "off, session or transaction"},
		{"u:pw@tcp(h)/db?respool_pgbouncer=transaction", "respool_pgbouncer", "transaction", `off with driver "mysql"`},
		{"postgres://h/db?respool_pgbouncer=transaction&respool_init_sql=SET%20search_path%20TO%20app", "respool_init_sql",
			"SET search_path TO app", "no init SQL with respool_pgbouncer=transaction"},
	} {
		_, err := ParseDSN(tt.dsn)
		var de *DSNError
		if !errors.As(err, &de) || !errors.Is(err, ErrInvalidConfig) || de.Key != tt.key || de.Value != tt.value ||
			!strings.Contains(err.Error(), tt.accepted) {
			t.Errorf("%s: %v; want a DSNError naming %s=%q and %q", tt.dsn, err, tt.key, tt.value, tt.accepted)
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: the error shows the password: %v", tt.dsn, err)
		}
	}
	if _, err := ParseDSN("postgres://h/db?respool_pgbouncer=session&respool_init_sql=SET%20a%20%3D%201"); err != nil {
		t.Errorf("init SQL in session mode: %v; want it accepted (the session is the client's)", err)
	}
}

// TestPgBouncerConfigRefusals: NewConnector refuses, naming the setting and
// what to do, what cannot work through PgBouncer: another driver, a
// Connector, init SQL in transaction mode, a run-time parameter PgBouncer
// refuses at connect, and pgx query modes that break under transaction
// pooling; it accepts the others.
func TestPgBouncerConfigRefusals(t *testing.T) {
	const dsn = "postgres://u:secret@127.0.0.1:1/db?sslmode=disable"
	for _, tt := range []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"transaction", Config{DriverName: "pgx", DSN: dsn, PgBouncer: "transaction"}, ""},
		{"session", Config{DriverName: "pgx/v5", DSN: dsn, PgBouncer: "session"}, ""},
		{"exec", Config{DriverName: "pgx", DSN: dsn + "&default_query_exec_mode=exec", PgBouncer: "transaction"}, ""},
		{"simple_protocol", Config{DriverName: "pgx", DSN: dsn + "&default_query_exec_mode=simple_protocol", PgBouncer: "transaction"}, ""},
		{"cache_describe", Config{DriverName: "pgx", DSN: dsn + "&default_query_exec_mode=cache_describe", PgBouncer: "transaction"}, ""},
		{"cache_statement in session mode", Config{DriverName: "pgx", DSN: dsn + "&default_query_exec_mode=cache_statement", PgBouncer: "session"}, ""},
		{"tracked parameters", Config{DriverName: "pgx", DSN: dsn + "&application_name=app&timezone=UTC", PgBouncer: "transaction"}, ""},
		{"off is empty", Config{DriverName: "pgx", DSN: dsn, PgBouncer: "off"}, `"off": want "" (off)`},
		{"bad value", Config{DriverName: "pgx", DSN: dsn, PgBouncer: "statement"}, `PgBouncer (respool_pgbouncer) "statement": want "" (off), "session" or "transaction"`},
		{"mysql", Config{DriverName: "mysql", DSN: "u:secret@tcp(h)/db", PgBouncer: "transaction"}, `is for PostgreSQL through PgBouncer, with DriverName "pgx"; DriverName is "mysql"`},
		{"connector", Config{Connector: dsnTestConnector{}, PgBouncer: "session"}, "is set with a Connector"},
		{"init sql", Config{DriverName: "pgx", DSN: dsn, PgBouncer: "transaction", InitSQL: []string{"SET search_path TO app"}},
			"InitSQL (respool_init_sql) with PgBouncer \"transaction\""},
		{"cache_statement", Config{DriverName: "pgx", DSN: dsn + "&default_query_exec_mode=cache_statement", PgBouncer: "transaction"},
			"default_query_exec_mode=cache_statement does not work through PgBouncer's transaction pooling"},
		{"describe_exec", Config{DriverName: "pgx", DSN: dsn + "&default_query_exec_mode=describe_exec", PgBouncer: "transaction"},
			"default_query_exec_mode=describe_exec does not work"},
		{"search_path", Config{DriverName: "pgx", DSN: dsn + "&search_path=app&statement_timeout=1s", PgBouncer: "session"},
			"the run-time parameter search_path, statement_timeout, which PgBouncer refuses at connect"},
		{"options", Config{DriverName: "pgx", DSN: dsn + "&options=-c%20geqo%3Doff", PgBouncer: "transaction"}, "run-time parameter options,"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewConnector(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("NewConnector: %v", err)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				_ = c.Close()
				t.Fatalf("NewConnector accepted it; want an error containing %q", tt.want)
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("NewConnector: %v; want ErrInvalidConfig, %q, no password", err, tt.want)
			}
		})
	}
}

// TestPgBouncerExecMode: in transaction mode, respool's pgx connections
// use pgx's exec mode unless the DSN chose a mode; session mode leaves
// pgx's default.
func TestPgBouncerExecMode(t *testing.T) {
	for _, tt := range []struct {
		mode, dsn string
		want      pgx.QueryExecMode
	}{
		{"transaction", "postgres://h/db", pgx.QueryExecModeExec},
		{"transaction", "postgres://h/db?default_query_exec_mode=simple_protocol", pgx.QueryExecModeSimpleProtocol},
		{"transaction", "host=h default_query_exec_mode=cache_describe", pgx.QueryExecModeCacheDescribe},
		{"session", "postgres://h/db", pgx.QueryExecModeCacheStatement},
		{"", "postgres://h/db", pgx.QueryExecModeCacheStatement},
	} {
		pc, err := pgx.ParseConfig(tt.dsn)
		if err != nil {
			t.Fatal(err)
		}
		pgbouncerConnConfig(tt.mode, pc, tt.dsn)
		if pc.DefaultQueryExecMode != tt.want {
			t.Errorf("%q %s: %v; want %v", tt.mode, tt.dsn, pc.DefaultQueryExecMode, tt.want)
		}
	}
}

// fakeBouncer is a PostgreSQL server as far as pgx's startup goes, with
// session key pid, that never answers a query, and holds every cancel
// request's socket open until the test releases it, as PgBouncer does
// while it forwards the request (over a new server connection: long on a
// busy server). A cancel request's socket the client closed first is
// counted (PgBouncer 1.18.0 exits on it: its bug #801).
type fakeBouncer struct {
	ln          net.Listener
	cancels     chan struct{} // a cancel request arrived
	release     chan struct{} // closed: close the cancel requests' sockets
	closedEarly atomic.Int32
	sessions    sync.WaitGroup
	releaseOnce sync.Once
}

func newFakeBouncer(t *testing.T, pid uint32) *fakeBouncer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBouncer{ln: ln, cancels: make(chan struct{}, 16), release: make(chan struct{})}
	f.sessions.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.sessions.Go(func() { f.serve(c, pid) })
		}
	})
	t.Cleanup(func() {
		f.releaseCancels()
		_ = ln.Close()
		f.sessions.Wait()
	})
	return f
}

func (f *fakeBouncer) releaseCancels() { f.releaseOnce.Do(func() { close(f.release) }) }

func (f *fakeBouncer) serve(c net.Conn, pid uint32) {
	defer c.Close()
	b := pgproto3.NewBackend(c, c)
	msg, err := b.ReceiveStartupMessage()
	if err != nil {
		return
	}
	switch msg.(type) {
	case *pgproto3.CancelRequest:
		f.cancels <- struct{}{}
		<-f.release
		// Has the client closed its end meanwhile? Its FIN is there by now.
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			f.closedEarly.Add(1)
		}
	case *pgproto3.StartupMessage:
		b.Send(&pgproto3.AuthenticationOk{})
		b.Send(&pgproto3.ParameterStatus{Name: "standard_conforming_strings", Value: "on"})
		b.Send(&pgproto3.BackendKeyData{ProcessID: pid, SecretKey: []byte{1, 2, 3, 4}})
		b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		if b.Flush() != nil {
			return
		}
		for { // no answer, ever; the session ends with the client's Terminate
			if msg, err := b.Receive(); err != nil {
				return
			} else if _, ok := msg.(*pgproto3.Terminate); ok {
				return
			}
		}
	}
}

func (f *fakeBouncer) config(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	pc, err := pgx.ParseConfig("postgres://u@" + f.ln.Addr().String() + "/db?sslmode=disable&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// TestPgBouncerCancelSocketOutlivesTheCall: behind PgBouncer, a statement
// whose context ended returns within CancelWait, but the socket of its
// cancel request stays open until PgBouncer closes it (PgBouncer 1.18.0
// exits when a client closes it first). Without PgBouncer, the socket is
// closed at CancelWait, as before.
func TestPgBouncerCancelSocketOutlivesTheCall(t *testing.T) {
	const wait = 100 * time.Millisecond
	for _, mode := range []string{"transaction", "session", ""} {
		t.Run("pgbouncer="+mode, func(t *testing.T) {
			var f *fakeBouncer
			t.Cleanup(func() { // after f's cleanup: every cancel request has been looked at
				got := f.closedEarly.Load()
				switch {
				case mode != "" && got != 0:
					t.Errorf("the client closed %d cancel request sockets before the server did; want none", got)
				case mode == "":
					t.Logf("without PgBouncer: %d cancel request sockets closed by the client first (at CancelWait)", got)
				}
			})
			f = newFakeBouncer(t, 4242)
			conn, err := pgxConnector(f.config(t), pgxPieces{cancelWait: wait, endWait: -1, pgbouncer: mode}, nil).Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = conn.(driver.QueryerContext).QueryContext(ctx, "SELECT pg_sleep(10)", nil)
			if took := time.Since(start); err == nil || took > pgbouncerCancelHold/3 {
				t.Fatalf("the call returned %v after %v; want an error within CancelWait (%v), long before %v", err, took, wait, pgbouncerCancelHold)
			}
			select {
			case <-f.cancels: // held until f's cleanup releases it
			case <-time.After(5 * time.Second):
				t.Fatalf("no cancel request (the call: %v)", err)
			}
		})
	}
}

// TestPoolerWarning: a connection whose backend process id is above 2^22
// (PgBouncer's made-up cancel key) is logged once per Connector, at Warn,
// naming respool_pgbouncer; a PostgreSQL process id is not.
func TestPoolerWarning(t *testing.T) {
	for _, tt := range []struct {
		pid   uint32
		lines int
	}{{3487138364, 1}, {pgbouncerPIDFloor + 1, 1}, {pgbouncerPIDFloor, 0}, {4242, 0}} {
		f := newFakeBouncer(t, tt.pid)
		var buf bytes.Buffer
		w := &poolerWarning{logger: slog.New(slog.NewTextHandler(&buf, nil)), poolName: "p"}
		for range 3 {
			conn, err := pgxConnector(f.config(t), pgxPieces{cancelWait: -1, endWait: -1}, nil).Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			w.check(conn)
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Count(buf.String(), "level=WARN"); got != tt.lines || tt.lines > 0 &&
			!strings.Contains(buf.String(), fmt.Sprintf("respool_pgbouncer=transaction (or session, its pool_mode)\" pool=p backend_pid=%d", tt.pid)) {
			t.Errorf("pid %d: %d lines; want %d naming respool_pgbouncer and the pid:\n%s", tt.pid, got, tt.lines, buf.String())
		}
	}
}

// TestPgBouncerHookExecMode: behind PgBouncer in transaction mode, an
// attempt whose PgxBeforeConnect hook chose a query mode that breaks there
// fails, naming it; one that chose a mode that works goes on.
func TestPgBouncerHookExecMode(t *testing.T) {
	for _, tt := range []struct {
		mode pgx.QueryExecMode
		ok   bool
	}{{pgx.QueryExecModeDescribeExec, false}, {pgx.QueryExecModeCacheStatement, false}, {pgx.QueryExecModeSimpleProtocol, true}} {
		hook := func(_ context.Context, cc *pgx.ConnConfig) error { cc.DefaultQueryExecMode = tt.mode; return nil }
		cc, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db")
		if err != nil {
			t.Fatal(err)
		}
		err = pgxBeforeConnect(hook, pgxPieces{cancelWait: -1, endWait: -1, pgbouncer: pgbouncerTransaction})(context.Background(), cc)
		if tt.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "PgxBeforeConnect set DefaultQueryExecMode "+tt.mode.String()) {
			t.Errorf("%v: %v; want ok %v", tt.mode, err, tt.ok)
		}
	}
}
