package dbclass

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// cutProxy forwards loopback TCP connections to a server and cuts a
// connection right after it has forwarded a client chunk containing
// marker: the statement reaches the server, its answer never reaches the
// client. It drops PostgreSQL cancel requests, which pgconn sends when it
// gives a connection up: the network is what failed, and a cancel arriving
// in time would stop the statement, making the outcome a race.
type cutProxy struct {
	ln     net.Listener
	target string
	marker []byte
	cuts   atomic.Int32 // connections cut after forwarding the marker
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, target, marker string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, marker: []byte(marker)}
	p.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return // closed
			}
			p.wg.Go(func() { p.forward(client) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

func (p *cutProxy) forward(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	// cut is set before the marked statement is forwarded, so no answer to
	// it can reach the client. Earlier answers were delivered already: the
	// client waits for them before sending its next statement.
	var cut atomic.Bool
	p.wg.Go(func() {
		defer client.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if cut.Load() {
				return
			}
			if n > 0 {
				if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	buf := make([]byte, 64<<10)
	for first := true; ; first = false {
		n, err := client.Read(buf)
		if first && isCancelRequest(buf[:n]) {
			return
		}
		if n > 0 {
			marked := bytes.Contains(buf[:n], p.marker)
			if marked {
				// Counted before it is forwarded: the client may see the
				// cut (the answer's reader closes its side) before this
				// goroutine runs again.
				p.cuts.Add(1)
				cut.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
			if marked {
				return // the deferred closes cut both sides
			}
		}
		if err != nil {
			return
		}
	}
}

// isCancelRequest reports whether b is a PostgreSQL CancelRequest: length
// 16, request code 80877102.
func isCancelRequest(b []byte) bool {
	return len(b) == 16 && binary.BigEndian.Uint32(b) == 16 && binary.BigEndian.Uint32(b[4:]) == 80877102
}
