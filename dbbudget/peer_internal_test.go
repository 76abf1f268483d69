package dbbudget

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/peersig"
	"github.com/respool/respool/resilience"
)

// queued returns the signals p has queued to send ("kind left", left
// rounded to the second), emptying the queue.
func queued(p *peer) []string {
	var out []string
	for {
		select {
		case s := <-p.out:
			out = append(out, s.kind+" "+time.Until(s.till).Round(time.Second).String())
		default:
			return out
		}
	}
}

// A Guard's own pause and open circuit are queued to be sent (a pause
// extended by less than 100ms is not sent again, a circuit opened for
// credentials not at all); a line received pauses the Guard's creations
// as long, and that pause is not sent on; the Guard's own lines, and those
// it cannot read, change nothing; another's hello asks for this Guard's
// signals again.
func TestSignalsAreQueuedOnceAndAppliedAsAPause(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var p *peer
	c := &shareConfig{ShareConfig: ShareConfig{Name: "orders", Timeout: time.Second, Logger: slog.New(slog.DiscardHandler)}}
	g, err := dbguard.New(dbguard.Config{Name: "db", Clock: clk, Join: func(g *dbguard.Guard) (resilience.Listener, func()) {
		p = newPeer(g, c)
		return p.tell, p.cancel
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	own := errors.New("too many connections")

	g.Pause().Hold(2*time.Second, own)
	g.Pause().Hold(2*time.Second+50*time.Millisecond, own) // extended by 50ms
	now := clk.Now()
	p.tell(resilience.Event{Time: now, Mechanism: "breaker", Kind: resilience.EventStateChange, From: "closed", To: "open", Delay: 5 * time.Second})
	p.tell(resilience.Event{Time: now, Mechanism: "breaker", Kind: resilience.EventStateChange, From: "closed", To: "open",
		Delay: 10 * time.Second, Err: errors.New("password authentication failed")})
	if got, want := queued(p), []string{"pause 2s", "open 5s"}; !slices.Equal(got, want) {
		t.Fatalf("queued %q for a pause of 2s extended by 50ms, a circuit opened for 5s, then for credentials; want %q", got, want)
	}

	before := g.Pause().State()
	for _, line := range []string{
		peersig.Line(p.id, peersig.Pause, 9*time.Second), // its own
		peersig.Line(p.id, hello, 0),                     // its own hello
		"v1 other:1:ab pause x",                          // unreadable
		"v2 other:1:ab pause 9000",                       // another version
		"v1 other:1:ab close 9000",                       // another kind
		"v1 other:1:ab pause 0",
		"garbage",
	} {
		p.receive(line)
	}
	if s := g.Pause().State(); s.Pauses != before.Pauses || !s.Until.Equal(before.Until) || p.hello {
		t.Fatalf("pause %+v (hello %v) after lines to ignore; want %+v (false)", s, p.hello, before)
	}
	p.receive("v1 otherhost:42:ab hello 1")
	if !p.hello {
		t.Fatal("another's hello did not ask for this Guard's signals again")
	}

	p.receive("v1 otherhost:42:ab open 7000")
	s := g.Pause().State()
	if !s.Holding() || !s.Until.Equal(now.Add(7*time.Second)) ||
		!strings.Contains(s.Reason.Error(), "dbbudget orders: circuit open in another process (otherhost:42)") {
		t.Fatalf("pause after another's circuit opened for 7s: %+v; want it held 7s, for that reason", s)
	}
	if got := queued(p); len(got) != 0 {
		t.Fatalf("queued %q for a pause a line set; want nothing (no echo)", got)
	}
}
