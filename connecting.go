package respool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/respool/respool/pool"
)

// ConnectPhaseError says where a connection attempt to the server was when
// it was given up on, or when a caller's wait for a connection ended while
// the attempt was still under way: the address dialed and the phase. A
// server that accepts connections and never answers (a frozen or
// overloaded one, a proxy whose backend is gone) otherwise ends in a bare
// "context deadline exceeded".
//
// Err is what ended the wait, unchanged: the caller's context (errors.Is
// context.DeadlineExceeded or context.Canceled), the pool's AcquireTimeout
// or Pool.CreateTimeout, or the real driver's own error (for pgx a
// *pgconn.ConnectError, for which pgconn.Timeout still reports true):
// errors.Is and errors.As see through to it.
//
// It is known for the connections respool dials (pgx and
// go-sql-driver/mysql from a DSN, with Config.SessionEndWait on: the
// default), and returned only for a wait ended by a deadline, a cancel or
// a timeout.
type ConnectPhaseError struct {
	// Addr is the address dialed: host:port, or a Unix socket's path.
	Addr string
	// Phase is "dial" (resolving the host and opening the connection),
	// "TLS" (negotiating TLS), "startup" (connected; the server has not
	// answered yet: PostgreSQL's answer to the startup message, MySQL's
	// greeting) or "auth" (the server answered; authentication and the
	// session's setup have not finished).
	Phase string
	// Err is what ended the wait (see above).
	Err error

	pending bool          // the attempt was still under way when the wait ended
	elapsed time.Duration // time spent in the phase
	timeout error         // pgconn's timeout error for a pgx wait its deadline ended (see pgTimeout); else nil
}

func (e *ConnectPhaseError) Error() string {
	if e.pending {
		return fmt.Sprintf("respool: no connection: the attempt to %s is in its %s phase (%s) since %v: %v",
			e.Addr, e.Phase, phaseHint(e.Phase), e.elapsed.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("respool: the attempt to %s was given up on in its %s phase (%s) after %v: %v",
		e.Addr, e.Phase, phaseHint(e.Phase), e.elapsed.Round(time.Millisecond), e.Err)
}

// Unwrap returns Err and, for pgx when a deadline ended the wait,
// pgconn's timeout error, so that pgconn.Timeout(err) reports true as it
// does for pgx's driver.
func (e *ConnectPhaseError) Unwrap() []error {
	if e.timeout != nil {
		return []error{e.Err, e.timeout}
	}
	return []error{e.Err}
}

// connectPhase is where a connection attempt is (see dialLog.at).
type connectPhase uint8

const (
	phaseNone connectPhase = iota
	phaseDial
	phaseConnected // PostgreSQL: connected, nothing written yet
	phaseTLS
	phaseStartup
	phaseGreeted // MySQL: the server's greeting read, the client's answer not yet written
	phaseAuth
)

func (p connectPhase) String() string {
	switch p {
	case phaseDial:
		return "dial"
	case phaseTLS:
		return "TLS"
	case phaseConnected, phaseStartup:
		return "startup"
	case phaseGreeted, phaseAuth:
		return "auth"
	}
	return ""
}

func phaseHint(phase string) string {
	switch phase {
	case "dial":
		return "no connection to the server yet"
	case "TLS":
		return "connected, the TLS handshake has not finished"
	case "startup":
		return "connected, the server has not answered"
	case "auth":
		return "the server answered, authentication and session setup have not finished"
	}
	return phase
}

// pgProgress moves a PostgreSQL attempt on as its wire reads and writes:
// the client's first message is an SSLRequest (or, with
// sslnegotiation=direct, a TLS ClientHello: a record of content type 22)
// that starts TLS, or the startup message; under TLS, the client's first
// record of application data (content type 23: TLS 1.3's Finished, or the
// startup message) ends the handshake on its side; the first bytes the
// server sends after that start the authentication. (Under TLS 1.3 the
// server may send a session ticket before it answers the startup message,
// which then shows as the auth phase.)
func pgProgress(p connectPhase, write bool, b []byte) connectPhase {
	switch {
	case p == phaseConnected && write:
		if len(b) >= 8 && string(b[:8]) == sslRequest || len(b) > 0 && b[0] == 22 {
			return phaseTLS
		}
		return phaseStartup
	case p == phaseTLS && write && len(b) > 0 && b[0] == 23:
		return phaseStartup
	case p == phaseStartup && !write:
		return phaseAuth
	}
	return p
}

// sslRequest is PostgreSQL's SSLRequest: length 8, code 80877103.
const sslRequest = "\x00\x00\x00\x08\x04\xd2\x16\x2f"

// mysqlProgress moves a MySQL attempt on as its wire reads and writes: the
// server speaks first (its greeting); the client's answer is an SSL request
// (a packet of 32 bytes) that starts TLS, or its handshake response, which
// starts the authentication; under TLS, the client's first record of
// application data (content type 23: TLS 1.3's Finished, TLS 1.2's first
// data) ends the handshake on its side.
func mysqlProgress(p connectPhase, write bool, b []byte) connectPhase {
	switch {
	case p == phaseStartup && !write:
		return phaseGreeted
	case p == phaseGreeted && write:
		if len(b) >= 4 && b[0] == 32 && b[1] == 0 && b[2] == 0 {
			return phaseTLS
		}
		return phaseAuth
	case p == phaseTLS && write && len(b) > 0 && b[0] == 23:
		return phaseAuth
	}
	return p
}

// enter moves the attempt to phase p at addr (addr "": the same address).
func (l *dialLog) enter(addr string, p connectPhase) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enterLocked(addr, p)
}

func (l *dialLog) enterLocked(addr string, p connectPhase) {
	if addr != "" {
		l.addr = addr
	}
	if p != l.phase {
		l.phase, l.since = p, time.Now()
	}
}

// observe moves the attempt on as its wire (of protocol proto) reads
// (write false) or writes b.
func (l *dialLog) observe(proto *protocol, write bool, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.enterLocked("", proto.progress(l.phase, write, b))
}

// at returns where the attempt is: a *ConnectPhaseError with Err err,
// pending or not; nil if it has not reached a dial function of respool's.
func (l *dialLog) at(err error, pending bool) *ConnectPhaseError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase == phaseNone {
		return nil
	}
	return &ConnectPhaseError{Addr: l.addr, Phase: l.phase.String(), Err: err, pending: pending, elapsed: time.Since(l.since)}
}

// hung reports whether err, a wait's end, is a deadline, a cancel or a
// timeout: one where the phase it ended in says what was hanging.
func hung(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, pool.ErrAcquireTimeout) || isTimeout(err)
}

// attemptSet is a Connector's connection attempts under way, and the last
// one that was given up on (see explain). Its methods are nil-safe.
type attemptSet struct {
	// pgx: the attempts are pgx's, whose error for a wait its deadline
	// ended satisfies pgconn.Timeout (see explain); set before the first.
	pgx bool

	mu   sync.Mutex // guards the fields below
	logs map[*dialLog]struct{}
	last *ConnectPhaseError // the last attempt that ended hung
}

// track adds l, the dial log of an attempt starting now, to the set.
func (s *attemptSet) track(l *dialLog) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		s.logs = make(map[*dialLog]struct{})
	}
	s.logs[l] = struct{}{}
}

// failed returns err, the error of one try of l's attempt (see
// physFactory.dial), as a *ConnectPhaseError when it is a deadline, a
// cancel or a timeout and the try reached a dial function of respool's:
// the last attempt given up on. The next try starts with no phase.
func (s *attemptSet) failed(l *dialLog, err error) error {
	pe := l.at(err, false)
	if !hung(err) || pe == nil {
		pe = nil
	} else {
		err = pe
	}
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if pe != nil {
			s.last = pe
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addr, l.phase = "", phaseNone
	return err
}

// end removes l from the set as its attempt ends, and stops l's wires from
// reporting to l.
func (s *attemptSet) end(l *dialLog) {
	l.mu.Lock()
	l.done = true
	for _, w := range l.wires {
		w.attempt.Store(nil)
	}
	l.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.logs, l)
}

// explain returns err, the end of a caller's wait for a connection by its
// context, AcquireTimeout or the pool's bound on a creation, with where the
// attempt it waited for was: the attempt under way longest in its phase;
// with none under way and own (the pool gave up on the attempt made for
// the caller: the pool's bound, which it reports before the attempt has
// ended), the last attempt given up on.
func (s *attemptSet) explain(err error, own bool) error {
	var pe *ConnectPhaseError
	if s == nil || !hung(err) || errors.As(err, &pe) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest *ConnectPhaseError
	for l := range s.logs {
		if e := l.at(err, true); e != nil && (oldest == nil || e.elapsed > oldest.elapsed) {
			oldest = e
		}
	}
	if own && s.last != nil && oldest == nil {
		e := *s.last
		e.Err = err
		oldest = &e
	}
	if oldest == nil {
		return err
	}
	if s.pgx && errors.Is(oldest.Err, context.DeadlineExceeded) {
		oldest.timeout, _ = pgTimeout.Load().(error) // as pgx's driver: pgconn.Timeout(err) holds
	}
	return oldest
}
