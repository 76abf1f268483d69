// Package pgxdialtest holds the test servers and counting pgx configs
// behind the cancel-request tests of package driver and
// factory/pgxfactory. Only tests import it.
package pgxdialtest

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// ClosingServer listens on loopback and, for every connection, reads what
// the client sends first (a startup message) and closes: a server that goes
// away after accepting, as one shutting down or past its limit.
func ClosingServer(t *testing.T) net.Listener {
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

// CountingConfig parses dsn with a dial function that counts its calls on
// dials and a frontend that reports pgx's Terminate on terminated (give it
// room for one: a report that finds it full is dropped).
func CountingConfig(t *testing.T, dsn string, dials *atomic.Int32, terminated chan<- struct{}) *pgx.ConnConfig {
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

// StartupServer is a PostgreSQL server as far as pgx's startup goes: it
// accepts every connection, completes the startup with session key pid,
// and reads until the client goes away. It reports the pid of every cancel
// request it gets on cancels.
func StartupServer(t *testing.T, pid uint32, cancels chan<- uint32) net.Listener {
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
