// Package peersig is what redisbudget and dbbudget share of the signals a
// Guard sends the Guards of other processes (their Share): which events
// are sent, the line that carries one, "v1 ORIGIN KIND MILLISECONDS", and
// how one received is applied (a pause of the Guard's creations). Each
// backend carries the lines its own way (Redis pub/sub, PostgreSQL
// LISTEN/NOTIFY).
package peersig

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/resilience"
)

// The kinds of signal: a Guard's creations paused, or its circuit open.
const (
	Pause = "pause"
	Open  = "open"
)

// Kinds are the kinds of signal a Guard sends.
var Kinds = []string{Pause, Open}

// MinStep is how much later than the last signal sent a pause or an open
// circuit must end for another to be sent: back-pressure extends a pause
// at each refusal, which need not each be sent.
const MinStep = 100 * time.Millisecond

// Remote is the reason of a pause a signal set: a pause whose reason is
// one is not sent on.
type Remote struct {
	Mechanism string // "redisbudget", "dbbudget"
	Kind      string // Pause or Open
	Origin    string // the sender, host:pid
	Name      string // the Share's Name
}

func (r *Remote) Error() string {
	what := "creations paused"
	if r.Kind == Open {
		what = "circuit open"
	}
	return fmt.Sprintf("%s %s: %s in another process (%s)", r.Mechanism, r.Name, what, r.Origin)
}

// Of returns the signal e calls for, if any: a pause of the Guard's own
// creations (not one a signal set), or its circuit opening for another
// reason than its credentials (dbguard sets Err then), for d.
func Of(e resilience.Event) (kind string, d time.Duration, ok bool) {
	var r *Remote
	if errors.As(e.Err, &r) {
		return "", 0, false
	}
	switch {
	case e.Mechanism == "pause" && e.Kind == resilience.EventPaused:
		kind, d = Pause, e.RetryAt.Sub(e.Time)
	case e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange && e.To == "open" && e.Err == nil:
		kind, d = Open, e.Delay
	default:
		return "", 0, false
	}
	return kind, d, d > 0
}

// Sent remembers, by kind, when the last signal sent said it ends.
type Sent struct {
	mu   sync.Mutex
	till map[string]time.Time
}

// Due reports whether a signal of kind ending at till is to be sent: the
// first, or one ending MinStep or more later than the last; it is then
// remembered.
func (s *Sent) Due(kind string, till time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.till[kind]; ok && till.Sub(last) < MinStep {
		return false
	}
	if s.till == nil {
		s.till = map[string]time.Time{}
	}
	s.till[kind] = till
	return true
}

// ProcessID names a Guard of this process: host, pid and a random part (a
// pid may be reused, and a test runs several "processes" in one).
func ProcessID() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(r[:])
}

// Line is the line of a signal of kind from origin, for left.
func Line(origin, kind string, left time.Duration) string {
	return "v1 " + origin + " " + kind + " " + strconv.FormatInt(max(left.Milliseconds(), 1), 10)
}

// Parse reads a line: its origin, kind (any word) and what is left; false
// for a line it cannot read.
func Parse(line string) (origin, kind string, left time.Duration, ok bool) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "v1" {
		return "", "", 0, false
	}
	ms, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || ms < 0 {
		return "", "", 0, false
	}
	return f[1], f[2], time.Duration(ms) * time.Millisecond, true
}

// Apply applies a line to g: another's pause or open circuit pauses g's
// creations as long, for a Remote reason (mechanism, name). It ignores
// the lines of self (g's own), those it cannot read, and all of them
// when g's pause is off.
func Apply(g *dbguard.Guard, line, self, mechanism, name string) {
	origin, kind, left, ok := Parse(line)
	pause := g.Pause()
	if !ok || origin == self || (kind != Pause && kind != Open) || left <= 0 || pause == nil {
		return
	}
	pause.Hold(left, &Remote{Mechanism: mechanism, Kind: kind, Origin: OriginName(origin), Name: name})
}

// OriginName is a Guard's id without its random part: host:pid.
func OriginName(id string) string {
	if i := strings.LastIndexByte(id, ':'); i > 0 {
		return id[:i]
	}
	return id
}
