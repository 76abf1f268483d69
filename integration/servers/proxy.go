package servers

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy on a loopback port in front of a server, which a test
// can tell to stop forwarding: as on a network path that drops every packet,
// bytes then pass in neither direction but every connection stays open, so
// that a client's reads and writes block instead of failing. New connections
// are accepted meanwhile, and stall the same way.
//
// The proxy counts the client connections it accepts (Accepted): a client's
// connection attempts. When the server cannot be reached (killed, or not
// yet listening), the proxy resets the client's connection at once, as a
// closed port refuses it.
//
// SetConnectDelay makes every new connection wait before the proxy dials
// the server, as a slow network path or handshake would; Open and PeakOpen
// count the client connections the proxy holds.
type Proxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64
	delay    atomic.Int64 // SetConnectDelay's, in nanoseconds
	open     atomic.Int64 // client connections accepted and not yet ended
	peak     atomic.Int64 // the most open at once

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // both ends of every proxied connection; guarded by mu
	gate    chan struct{}         // closed while forwarding; guarded by mu
	closed  bool                  // guarded by mu
	closing context.Context       // ends with Close
	close   context.CancelFunc
	wg      sync.WaitGroup // the accept loop, every dial and every copy loop
}

// StartProxy starts a Proxy that forwards to target (host:port).
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("servers: proxy: %w", err)
	}
	gate := make(chan struct{})
	close(gate)
	closing, closeFn := context.WithCancel(context.Background())
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{}), gate: gate,
		closing: closing, close: closeFn}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Accepted returns how many client connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Server returns a Server like s that is reached through the proxy. Its Stop
// and Restart do nothing to s.
func (p *Proxy) Server(s *Server) *Server {
	host, port, _ := net.SplitHostPort(p.Addr())
	n, _ := strconv.Atoi(port)
	return &Server{Kind: s.Kind, Backend: s.Backend, Host: host, Port: n,
		User: s.User, Password: s.Password, Database: s.Database}
}

// StopForwarding makes the proxy hold every byte it receives from then on.
func (p *Proxy) StopForwarding() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // already stopped
	}
}

// Forward makes the proxy forward again, starting with the bytes it held.
func (p *Proxy) Forward() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Close stops the proxy, closes every connection through it and waits for
// its goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.accepted.Add(1)
		p.opened()
		p.wg.Add(1)
		go p.connect(client) // a dial to a frozen server may take long
	}
}

// connect dials the target for client and starts forwarding, or resets
// client when the target cannot be reached or the proxy is closed.
func (p *Proxy) connect(client net.Conn) {
	defer p.wg.Done()
	if !p.waitDelay() {
		p.open.Add(-1)
		_ = client.Close()
		return
	}
	var d net.Dialer
	server, err := d.DialContext(p.closing, "tcp", p.target)
	if err != nil {
		p.open.Add(-1)
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with a reset, as a refused connection
		}
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		p.open.Add(-1)
		return
	}
	p.wg.Add(2)
	go func() {
		p.copy(server, client)
		p.open.Add(-1) // the client's side ended: the connection is over
	}()
	go p.copy(client, server)
}

// track records both ends of a connection so that Close closes them; it
// closes them and returns false when the proxy is closed.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_, _ = a.Close(), b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// copy forwards from src to dst, holding what it read while the proxy does
// not forward. When either side ends, it closes both.
func (p *Proxy) copy(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
		_, _ = dst.Close(), src.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			select {
			case <-gate:
			case <-p.closing.Done():
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF, a reset or Close: the connection is over
			return
		}
	}
}

// SetConnectDelay makes the proxy wait d after accepting each new
// connection before it dials the server (0: no wait), so that opening a
// connection through it takes d longer. Connections already open are
// unaffected.
func (p *Proxy) SetConnectDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Open returns how many client connections the proxy holds now: accepted
// (being connected included) and not yet ended by either side.
func (p *Proxy) Open() int64 { return p.open.Load() }

// PeakOpen returns the most client connections the proxy held at once.
func (p *Proxy) PeakOpen() int64 { return p.peak.Load() }

// opened counts an accepted client connection in Open and PeakOpen.
func (p *Proxy) opened() {
	n := p.open.Add(1)
	for peak := p.peak.Load(); n > peak && !p.peak.CompareAndSwap(peak, n); peak = p.peak.Load() {
	}
}

// waitDelay waits out the connect delay; false when the proxy closed first.
func (p *Proxy) waitDelay() bool {
	d := time.Duration(p.delay.Load())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.closing.Done():
		return false
	}
}
