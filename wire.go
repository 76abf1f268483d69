package respool

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// wireConn is the socket under one physical connection, as respool's dial
// function hands it to the real driver (see wireDial). It does two things
// the real drivers cannot be asked about:
//
//   - It counts the bytes written, so that a statement's failure can be
//     told apart: nothing written during the call means nothing reached the
//     server (see physConn.unsent).
//   - Once the connection is adopted by the pool (see dialLog.adopt), its
//     Close does not close the socket: it wakes the driver's pending read
//     and leaves the socket to awaitSessionEnd, which the pool's Destroy
//     calls: it says goodbye in the server's protocol (go-sql-driver/mysql
//     walks away from a cancelled statement without COM_QUIT) and waits
//     until the server closes the connection, which it does once it has
//     ended the session: after the statement it still runs. Only then is
//     the socket closed and the pool's slot freed, so that a cancelled
//     statement the server still runs counts against the pool's maximum.
//     The client's side stays open meanwhile (no FIN), since a proxy on the
//     way may close both sides on the first FIN, before the server is done.
//
// Before adoption (a dial of a connection attempt that failed, a fallback
// the driver gave up), Close closes at once.
type wireConn struct {
	net.Conn
	written atomic.Uint64
	// cancelSent is set when respool asked the server to cancel a statement
	// on the connection (pgx; see cancelHandler), until absorbStrayCancel.
	cancelSent atomic.Bool
	endWait    time.Duration // awaitSessionEnd's bound
	proto      protocol
	// attempt is the connection attempt the wire was dialed for, while it
	// is under way: the wire's reads and writes move it on (see
	// dialLog.observe); nil once it has ended.
	attempt atomic.Pointer[dialLog]

	mu       sync.Mutex    // held to change the fields below, and deadlines
	adopted  bool          // guarded by mu
	closed   atomic.Bool   // the driver called Close
	closedCh chan struct{} // closed when closed is set on an adopted wire

	// readMu is held by every read of the driver, so that awaitSessionEnd
	// reads alone once the driver's last read has returned.
	readMu sync.Mutex
}

// protocol is what awaitSessionEnd knows of a server's protocol.
type protocol struct {
	// goodbye is the client's last message. A server that reads it ends
	// the session; one that reads it in the middle of something else (a
	// packet the driver left half written, or under TLS) finds the protocol
	// broken and ends it too.
	goodbye []byte
	// teardown is how long the server may still count a session after it
	// closed the session's socket.
	teardown time.Duration
	// afterDial is a connection attempt's phase once its socket is
	// connected, and progress its next phase as the client reads or writes
	// b (see ConnectPhaseError).
	afterDial connectPhase
	progress  func(p connectPhase, write bool, b []byte) connectPhase
	// refusedBadConn: the driver returns driver.ErrBadConn for a statement
	// it has sent only when the server refused the statement, which then
	// did not run. go-sql-driver/mysql with rejectReadOnly=true does so
	// for a write the server refused as read-only (1290, 1792, 1836), and
	// returns driver.ErrBadConn after writing in no other case (its
	// errBadConnNoWrite); not with multiStatements, where the refusal can
	// come after a statement of the query that ran. See mysqlRefusals.
	refusedBadConn bool
	// multiStatements: a query may hold several statements, so a refusal
	// may follow statements of it that ran (go-sql-driver/mysql's
	// multiStatements).
	multiStatements bool
}

var (
	// MySQL's COM_QUIT: a packet of one byte, 0x01, sequence 0. MariaDB
	// closes the socket before it removes the session from its count
	// (close_connection, then unlink_thd, in do_handle_one_connection), so
	// a new connection made as soon as the socket closes can still be
	// counted with it: teardown covers the gap for a session with nothing
	// to roll back on a server with CPU to spare, not a long rollback or a
	// busy server (see Config.SessionEndWait; integration/faults
	// TestServerCountsASessionItTearsDown).
	mysqlProtocol = protocol{goodbye: []byte{1, 0, 0, 0, 1}, teardown: 5 * time.Millisecond,
		afterDial: phaseStartup, progress: mysqlProgress}
	// PostgreSQL's Terminate: 'X', length 4. A backend leaves the server's
	// count before its process exits, which closes the socket.
	pgProtocol = protocol{goodbye: []byte{'X', 0, 0, 0, 4}, afterDial: phaseConnected, progress: pgProgress}
)

func newWireConn(c net.Conn, endWait time.Duration, proto protocol) *wireConn {
	return &wireConn{Conn: c, endWait: endWait, proto: proto, closedCh: make(chan struct{})}
}

func (w *wireConn) isClosed() bool { return w.closed.Load() }

func (w *wireConn) Read(b []byte) (int, error) {
	if w.isClosed() {
		return 0, net.ErrClosed
	}
	w.readMu.Lock()
	n, err := w.Conn.Read(b)
	w.readMu.Unlock()
	if l := w.attempt.Load(); l != nil && n > 0 {
		l.observe(&w.proto, false, b[:n])
	}
	if err != nil && w.isClosed() {
		err = net.ErrClosed // woken by Close's deadline: the driver closed it
	}
	return n, err
}

func (w *wireConn) Write(b []byte) (int, error) {
	if w.isClosed() {
		return 0, net.ErrClosed
	}
	if l := w.attempt.Load(); l != nil {
		l.observe(&w.proto, true, b)
	}
	n, err := w.Conn.Write(b)
	w.written.Add(uint64(n))
	return n, err
}

// SyscallConn gives the socket's file descriptor, which go-sql-driver/mysql
// reads without blocking to find a connection the server closed while it
// idled.
func (w *wireConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := w.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// Deadlines set after Close are ignored: the wire's deadlines are
// awaitSessionEnd's then.

func (w *wireConn) SetDeadline(t time.Time) error {
	return w.setDeadline(t, w.Conn.SetDeadline)
}

func (w *wireConn) SetReadDeadline(t time.Time) error {
	return w.setDeadline(t, w.Conn.SetReadDeadline)
}

func (w *wireConn) SetWriteDeadline(t time.Time) error {
	return w.setDeadline(t, w.Conn.SetWriteDeadline)
}

func (w *wireConn) setDeadline(t time.Time, set func(time.Time) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.Load() {
		return nil
	}
	return set(t)
}

// Close is the driver closing the connection. An adopted wire wakes the
// driver's pending read and keeps the socket open for awaitSessionEnd.
func (w *wireConn) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.Load() {
		return nil
	}
	w.closed.Store(true)
	if !w.adopted {
		return w.Conn.Close()
	}
	close(w.closedCh)
	_ = w.Conn.SetReadDeadline(time.Now()) // wake the driver's pending read
	return nil
}

// adopt marks w as the socket of a pooled connection, unless the driver has
// closed it already.
func (w *wireConn) adopt() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.Load() {
		return false
	}
	w.adopted = true
	return true
}

// awaitSessionEnd waits, for at most endWait in all, until the driver has
// closed w (pgx may close it from a goroutine of its own, after Close
// returned), then says goodbye and waits until the server has closed the
// connection, discarding what the server still sends; then it closes the
// socket. It is nil-safe: a connection respool did not dial has no wire.
func (w *wireConn) awaitSessionEnd() {
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.endWait)
	defer cancel()
	select {
	case <-w.closedCh:
	case <-ctx.Done():
		_ = w.Conn.Close() // the driver still holds it, its close stuck on a server that does not answer
		return
	}
	w.readMu.Lock() // the driver's last read has returned, woken by Close
	defer w.readMu.Unlock()
	ended := w.sayGoodbye(ctx)
	_ = w.Conn.Close()
	if ended && w.proto.teardown > 0 {
		t := time.NewTimer(w.proto.teardown)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// sayGoodbye sends the protocol's goodbye and reads until the server
// closes the connection, or ctx's deadline; it reports whether the server
// closed it.
func (w *wireConn) sayGoodbye(ctx context.Context) bool {
	deadline, _ := ctx.Deadline()
	if w.Conn.SetDeadline(deadline) != nil {
		return false
	}
	if _, err := w.Conn.Write(w.proto.goodbye); err != nil {
		return !isTimeout(err) // a reset or a broken pipe: the server closed it already
	}
	_, err := io.Copy(io.Discard, w.Conn) // nil at the server's close
	return err == nil || !isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialLog records the wires dialed during one connection attempt, and
// where the attempt is (see ConnectPhaseError); it travels in the attempt's
// context (see withDialLog), from physFactory.create to wireDial.
type dialLog struct {
	mu    sync.Mutex // guards the fields below
	wires []*wireConn
	addr  string       // the address dialed last
	phase connectPhase // the attempt's phase
	since time.Time    // when it entered the phase
	done  bool         // the attempt has ended
}

type dialLogKey struct{}

func withDialLog(ctx context.Context) (context.Context, *dialLog) {
	l := new(dialLog)
	return context.WithValue(ctx, dialLogKey{}, l), l
}

// adopt returns the wire of the connection the attempt made: the last one
// dialed that the driver has not closed; nil if none.
func (l *dialLog) adopt() *wireConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.wires) - 1; i >= 0; i-- {
		if l.wires[i].adopt() {
			return l.wires[i]
		}
	}
	return nil
}

// dialFunc is the dial function both pgx and go-sql-driver/mysql take.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// wireDial wraps dial: a socket dialed for a connection attempt of the pool
// (a context from withDialLog) is a wireConn whose awaitSessionEnd speaks
// proto and waits at most endWait, and whose reads and writes move the
// attempt's phase on (the dial moves it to phaseDial, a connected socket to
// proto.afterDial); any other (pgx's cancel requests) is dial's own.
func wireDial(dial dialFunc, endWait time.Duration, proto protocol) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		l, _ := ctx.Value(dialLogKey{}).(*dialLog)
		if l != nil {
			l.enter(addr, phaseDial)
		}
		c, err := dial(ctx, network, addr)
		if err != nil || l == nil {
			return c, err
		}
		w := newWireConn(c, endWait, proto)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.wires = append(l.wires, w)
		if !l.done && proto.progress != nil {
			w.attempt.Store(l)
			l.enterLocked("", proto.afterDial)
		}
		return w, nil
	}
}
