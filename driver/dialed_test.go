package driver

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"
)

// startClosingServer listens on loopback and, for every connection, reads
// what the client sends first (a startup message) and closes: a server that
// goes away after accepting, as one shutting down or past its limit.
func startClosingServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 512))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln
}

// terminateWriter passes writes on and reports pgx's Terminate message,
// which pgconn's asyncClose sends after its cancel request.
type terminateWriter struct {
	io.Writer
	sent chan<- struct{}
}

func (w terminateWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, pgProtocol.goodbye) {
		select {
		case w.sent <- struct{}{}:
		default:
		}
	}
	return w.Writer.Write(b)
}

// countingPgxConfig parses dsn with a dial function that counts its calls
// and a frontend that reports pgx's Terminate on terminated.
func countingPgxConfig(t *testing.T, dsn string, dials *atomic.Int32, terminated chan<- struct{}) *pgx.ConnConfig {
	t.Helper()
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dial := pc.DialFunc
	pc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	pc.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		return pgproto3.NewFrontend(r, terminateWriter{Writer: w, sent: terminated})
	}
	return pc
}

// TestPgxFailedStartupSendsNoCancelRequest: pgconn answers a connection
// that fails during its startup (asyncClose) with a cancel request, a
// second connection to the server, with no session key to cancel. respool
// refuses that dial: one connection attempt, one dial.
func TestPgxFailedStartupSendsNoCancelRequest(t *testing.T) {
	for _, endWait := range []time.Duration{DefaultSessionEndWait, -1} {
		ln := startClosingServer(t)
		var dials atomic.Int32
		terminated := make(chan struct{}, 1)
		pc := countingPgxConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &dials, terminated)
		ctx, _ := withDialLog(context.Background())
		if _, err := pgxConnector(pc, DefaultCancelWait, endWait).Connect(ctx); err == nil {
			t.Fatal("Connect to a server that closes at once succeeded")
		}
		select {
		case <-terminated: // asyncClose is past its cancel request
		case <-time.After(10 * time.Second):
			t.Fatal("pgx sent no Terminate after the failed startup")
		}
		if n := dials.Load(); n != 1 {
			t.Errorf("SessionEndWait %v: %d dials for one failed connection attempt; want 1 (no cancel request)", endWait, n)
		}
	}
}

// startStartupServer is a PostgreSQL server as far as pgx's startup goes:
// it accepts every connection, completes the startup with session key pid,
// and reads until the client goes away. It reports the pid of every cancel
// request it gets on cancels.
func startStartupServer(t *testing.T, pid uint32, cancels chan<- uint32) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var sessions sync.WaitGroup
	sessions.Add(1)
	go func() {
		defer sessions.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sessions.Go(func() { serveStartup(c, pid, cancels) })
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		sessions.Wait()
	})
	return ln
}

func serveStartup(c net.Conn, pid uint32, cancels chan<- uint32) {
	defer c.Close()
	b := pgproto3.NewBackend(c, c)
	msg, err := b.ReceiveStartupMessage()
	if err != nil {
		return
	}
	switch msg := msg.(type) {
	case *pgproto3.CancelRequest:
		cancels <- msg.ProcessID
		return
	case *pgproto3.StartupMessage:
		b.Send(&pgproto3.AuthenticationOk{})
		b.Send(&pgproto3.BackendKeyData{ProcessID: pid, SecretKey: []byte{1, 2, 3, 4}})
		b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		if b.Flush() != nil {
			return
		}
		_, _ = io.Copy(io.Discard, c)
	}
}

// TestPgxStartedConnectionSendsCancelRequests: once the startup finished,
// a cancel request is dialed as pgx means it.
func TestPgxStartedConnectionSendsCancelRequests(t *testing.T) {
	const pid = 4242
	cancels := make(chan uint32, 1)
	ln := startStartupServer(t, pid, cancels)
	var dials atomic.Int32
	pc := countingPgxConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &dials, make(chan struct{}, 1))
	ctx, _ := withDialLog(context.Background())
	c, err := pgxConnector(pc, DefaultCancelWait, -1).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.(*stdlib.Conn).Conn().PgConn().CancelRequest(context.Background()); err != nil {
		t.Fatalf("CancelRequest of a started connection: %v", err)
	}
	if got := <-cancels; got != pid {
		t.Errorf("the server got a cancel request for pid %d; want %d", got, pid)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials; want 2: the connection and its cancel request", n)
	}
}
