// Package pgxdialtest holds the test servers and counting pgx configs
// behind the cancel-request tests of package respool (its driver and
// PgxFactory). Only tests import it.
package pgxdialtest

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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// closingServer listens on loopback and, for every connection, reads what
// the client sends first (a startup message) and closes: a server that goes
// away after accepting, as one shutting down or past its limit.
func closingServer(t *testing.T) net.Listener {
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

// terminate is pgx's Terminate message, which pgconn's asyncClose sends
// after its cancel request.
var terminate = []byte{'X', 0, 0, 0, 4}

// terminateWriter passes writes on and reports pgx's Terminate message.
type terminateWriter struct {
	io.Writer
	sent chan<- struct{}
}

func (w terminateWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, terminate) {
		select {
		case w.sent <- struct{}{}:
		default:
		}
	}
	return w.Writer.Write(b)
}

// countingConfig parses dsn with a dial function that counts its calls on
// dials and a frontend that reports pgx's Terminate on terminated (give it
// room for one: a report that finds it full is dropped).
func countingConfig(t *testing.T, dsn string, dials *atomic.Int32, terminated chan<- struct{}) *pgx.ConnConfig {
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

// startupServer is a PostgreSQL server as far as pgx's startup goes: it
// accepts every connection, completes the startup with session key pid,
// and reads until the client goes away. It reports the pid of every cancel
// request it gets on cancels.
func startupServer(t *testing.T, pid uint32, cancels chan<- uint32) net.Listener {
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

// FailedStartup is a closingServer and a countingConfig for it: every
// connection attempt with Config fails during its startup.
type FailedStartup struct {
	Config     *pgx.ConnConfig
	dials      atomic.Int32
	terminated chan struct{}
}

// NewFailedStartup starts a closingServer and returns its FailedStartup.
func NewFailedStartup(t *testing.T) *FailedStartup {
	t.Helper()
	ln := closingServer(t)
	s := &FailedStartup{terminated: make(chan struct{}, 1)}
	s.Config = countingConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &s.dials, s.terminated)
	return s
}

// ExpectNoCancelRequest waits, after one failed connection attempt with
// s.Config, until pgx said Terminate (pgconn's asyncClose is past its
// cancel request then) and fails t unless there was one dial: the
// attempt's, no cancel request.
func (s *FailedStartup) ExpectNoCancelRequest(t *testing.T) {
	t.Helper()
	select {
	case <-s.terminated:
	case <-time.After(10 * time.Second):
		t.Fatal("pgx sent no Terminate after the failed startup")
	}
	if n := s.dials.Load(); n != 1 {
		t.Errorf("%d dials for one failed connection attempt; want 1 (no cancel request)", n)
	}
}

// startedPID is the session key of a Started server's connections.
const startedPID = 4242

// Started is a startupServer and a countingConfig for it: every connection
// attempt with Config finishes its startup.
type Started struct {
	Config  *pgx.ConnConfig
	dials   atomic.Int32
	cancels chan uint32
}

// NewStarted starts a startupServer and returns its Started.
func NewStarted(t *testing.T) *Started {
	t.Helper()
	s := &Started{cancels: make(chan uint32, 1)}
	ln := startupServer(t, startedPID, s.cancels)
	s.Config = countingConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &s.dials, make(chan struct{}, 1))
	return s
}

// ExpectCancelRequest sends a cancel request for c, the one connection
// made with s.Config, and fails t unless the server got it for c's session
// and there were two dials: the connection's and its cancel request's.
func (s *Started) ExpectCancelRequest(t *testing.T, c *pgconn.PgConn) {
	t.Helper()
	if err := c.CancelRequest(context.Background()); err != nil {
		t.Fatalf("CancelRequest of a started connection: %v", err)
	}
	if got := <-s.cancels; got != startedPID {
		t.Errorf("the server got a cancel request for pid %d; want %d", got, startedPID)
	}
	if n := s.dials.Load(); n != 2 {
		t.Errorf("%d dials; want 2: the connection and its cancel request", n)
	}
}
