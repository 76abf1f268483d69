package redisbudget

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/resilience"
)

// sent returns the signals p has queued to send ("kind d"), emptying the
// queue.
func sent(p *peer) []string {
	var out []string
	for {
		select {
		case m := <-p.out:
			out = append(out, m.kind+" "+m.d.String())
		default:
			return out
		}
	}
}

// A Guard's own pause and open circuit are sent (a pause extended by less
// than peersig.MinStep is not sent again, a circuit opened for credentials not at
// all); a signal received pauses the Guard's creations as long, and that
// pause is not sent on; the Guard's own signals, and lines it cannot read,
// change nothing.
func TestSignalsAreSentOnceAndAppliedAsAPause(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var p *peer
	g, err := dbguard.New(dbguard.Config{Name: "db", Clock: clk, Join: func(g *dbguard.Guard) (resilience.Listener, func()) {
		p = newPeer(g, ShareConfig{Name: "orders", Timeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
		return p.tell, func() {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	own := errors.New("too many connections")

	g.Pause().Hold(2*time.Second, own)
	g.Pause().Hold(2*time.Second+50*time.Millisecond, own) // extended by 50ms
	if got, want := sent(p), []string{"pause 2s"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q for a pause of 2s extended by 50ms; want %q", got, want)
	}
	now := clk.Now()
	p.tell(resilience.Event{Time: now, Mechanism: "breaker", Kind: resilience.EventStateChange, From: "closed", To: "open", Delay: 5 * time.Second})
	p.tell(resilience.Event{Time: now, Mechanism: "breaker", Kind: resilience.EventStateChange, From: "closed", To: "open",
		Delay: 10 * time.Second, Err: errors.New("password authentication failed")})
	if got, want := sent(p), []string{"open 5s"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q for a circuit opened for 5s, then for credentials; want %q", got, want)
	}

	before := g.Pause().State()
	for _, line := range []string{
		"v1 " + p.id + " pause 9000", // its own
		"v1 other:1:ab pause x",      // unreadable
		"v2 other:1:ab pause 9000",   // another version
		"v1 other:1:ab close 9000",   // another kind
		"v1 other:1:ab pause 0",
		"garbage",
	} {
		p.apply(line)
	}
	if s := g.Pause().State(); s.Pauses != before.Pauses || !s.Until.Equal(before.Until) {
		t.Fatalf("pause %+v after signals to ignore; want %+v", s, before)
	}

	p.apply("v1 otherhost:42:ab open 7000")
	s := g.Pause().State()
	var r *remote
	if !s.Holding() || !s.Until.Equal(now.Add(7*time.Second)) || !errors.As(s.Reason, &r) ||
		!strings.Contains(s.Reason.Error(), "circuit open in another process (otherhost:42)") {
		t.Fatalf("pause after another's circuit opened for 7s: %+v; want it held 7s, for that reason", s)
	}
	if got := sent(p); len(got) != 0 {
		t.Fatalf("sent %q for a pause a signal set; want nothing (no echo)", got)
	}
}
