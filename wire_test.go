package respool

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// testGoodbye is the goodbye of the wires the tests dial.
var (
	testGoodbye  = []byte("bye!")
	testProtocol = protocol{goodbye: testGoodbye}
)

// fakeServer accepts one loopback connection and reads what the client
// sends until the client's goodbye (or its end), which it reports on
// clientDone with what it read; it ends the session, closing its side, when
// the test closes release.
type fakeServer struct {
	ln         net.Listener
	got        chan []byte   // everything read, up to the goodbye
	clientDone chan struct{} // closed when the server read the goodbye
	release    chan struct{} // the test closes it: the server ends the session
	ended      atomic.Bool   // set just before the server closes its side
	done       chan struct{}
}

func startFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, got: make(chan []byte, 1), clientDone: make(chan struct{}),
		release: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var got []byte
		buf := make([]byte, 64)
		for !bytes.HasSuffix(got, testGoodbye) {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		s.got <- bytes.TrimSuffix(got, testGoodbye)
		close(s.clientDone)
		<-s.release
		s.ended.Store(true)
	}()
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		<-s.done
	})
	return s
}

// dialWire dials s through wireDial as a pool's creation does, and adopts
// the wire.
func dialWire(t *testing.T, s *fakeServer, endWait time.Duration) *wireConn {
	t.Helper()
	var d net.Dialer
	ctx, log := withDialLog(context.Background())
	c, err := wireDial(d.DialContext, endWait, testProtocol)(ctx, "tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	w := log.adopt()
	if w == nil || w != c {
		t.Fatalf("adopt = %v; want the dialed wire", w)
	}
	return w
}

func TestWireCountsWrites(t *testing.T) {
	s := startFakeServer(t)
	w := dialWire(t, s, time.Minute)
	for _, msg := range []string{"hello", " server"} {
		if _, err := w.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.written.Load(); n != 12 {
		t.Errorf("written = %d; want 12", n)
	}
	close(s.release)
	_ = w.Close()
	w.awaitSessionEnd()
	if got := string(<-s.got); got != "hello server" {
		t.Errorf("the server got %q", got)
	}
}

// TestWireKeepsTheSessionUntilTheServerEndsIt: the driver's Close wakes its
// pending read and leaves the socket open; awaitSessionEnd says goodbye and
// returns only after the server closed its side.
func TestWireKeepsTheSessionUntilTheServerEndsIt(t *testing.T) {
	s := startFakeServer(t)
	w := dialWire(t, s, time.Minute)
	readErr := make(chan error, 1)
	go func() {
		_, err := w.Read(make([]byte, 16)) // the driver waiting for an answer
		readErr <- err
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-readErr; !errors.Is(err, net.ErrClosed) {
		t.Errorf("the driver's pending read got %v; want net.ErrClosed", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close = %v; want net.ErrClosed", err)
	}
	if err := w.SetReadDeadline(time.Now()); err != nil {
		t.Errorf("a deadline after Close: %v; want it ignored", err)
	}
	returned := make(chan struct{})
	go func() {
		w.awaitSessionEnd()
		close(returned)
	}()
	<-s.clientDone // the server read the goodbye while the session lives on
	close(s.release)
	<-returned
	if !s.ended.Load() {
		t.Error("awaitSessionEnd returned before the server ended the session")
	}
}

// TestWireWaitIsBounded: a server that never ends the session holds the
// wait for endWait at most; a driver that never closes the wire too.
func TestWireWaitIsBounded(t *testing.T) {
	for _, closeFirst := range []bool{true, false} {
		s := startFakeServer(t)
		w := dialWire(t, s, 20*time.Millisecond)
		if closeFirst {
			_ = w.Close()
		}
		w.awaitSessionEnd() // returns after 20ms
		if _, err := w.Conn.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("closeFirst %v: the socket after the wait: %v; want it closed", closeFirst, err)
		}
		if s.ended.Load() {
			t.Errorf("closeFirst %v: the server ended the session; the test meant it not to", closeFirst)
		}
	}
}

func TestWireNotAdoptedClosesAtOnce(t *testing.T) {
	s := startFakeServer(t)
	var d net.Dialer
	ctx, log := withDialLog(context.Background())
	dial := wireDial(d.DialContext, time.Minute, testProtocol)
	first, err := dial(ctx, "tcp", s.ln.Addr().String()) // a fallback the driver gives up
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	if _, err := first.(*wireConn).Conn.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a wire closed before adoption: %v; want its socket closed", err)
	}
	if w := log.adopt(); w != nil {
		t.Errorf("adopt = %v; want none: the only wire is closed", w)
	}
	// Without a dialLog (pgx's cancel requests), the socket is dial's own.
	c, err := dial(context.Background(), "tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*wireConn); ok {
		t.Error("a dial outside a pool's creation was wrapped")
	}
}
