package pool

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventLog collects the events OnEvent receives.
type eventLog struct {
	mu sync.Mutex
	es []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.es = append(l.es, e)
	l.mu.Unlock()
}

func (l *eventLog) of(k EventKind) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.es {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func TestEventsReachTheListenerAndTheLog(t *testing.T) {
	var got eventLog
	h := newHarness(t, Config{MaxObjects: 1, Name: "orders", OnEvent: got.add,
		BackoffDisabled: true, LeakTrackingDisabled: true})
	// A destroy for a reason, two failed creations, a recovery.
	if err := h.take().Discard(); err != nil {
		t.Fatal(err)
	}
	h.ev.wait(t, "destroyed", 1)
	refused := errors.New("connection refused")
	h.f.set(func(f *fakeFactory) { f.createErr = refused })
	for range 2 {
		if _, err := h.p.Take(context.Background()); !errors.Is(err, refused) {
			t.Fatalf("Take = %v, want the factory's error", err)
		}
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.giveBack(h.take())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	if d := got.of(EventDestroyed); len(d) != 2 || d[0].Reason != "discarded" || d[1].Reason != "closed" || d[0].Pool != "orders" {
		t.Fatalf("destroyed events = %+v, want discarded then closed, pool orders", d)
	}
	f := got.of(EventCreateFailed)
	if len(f) != 2 || !errors.Is(f[1].Err, refused) || f[1].Failures != 2 {
		t.Fatalf("create_failed events = %+v, want each failure, the second 2 in a row", f)
	}
	if r := got.of(EventCreateRecovered); len(r) != 1 || r[0].Failures != 2 {
		t.Fatalf("create_recovered events = %+v", r)
	}
	if len(got.of(EventClosing)) != 1 || len(got.of(EventClosed)) != 1 {
		t.Fatalf("closing/closed events: %d/%d, want 1/1", len(got.of(EventClosing)), len(got.of(EventClosed)))
	}
	log := h.log.String()
	for _, want := range []string{
		// The first failure is its caller's to report; the second, in a
		// row, says the failures persist.
		`level=WARN msg="create failed" pool=orders event=create_failed failures=2 in_a_row=2 error="connection refused"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, routine := range []string{"event=destroyed", "event=closing", "event=closed"} {
		if strings.Contains(log, routine) {
			t.Errorf("%s logged at Info: %s", routine, log)
		}
	}
}

func TestDestroyFailedIsLoggedWithItsReason(t *testing.T) {
	var got eventLog
	errClose := errors.New("close: broken pipe")
	h := newHarnessOf(t, Config{MaxObjects: 1, OnEvent: got.add, LeakTrackingDisabled: true},
		func(f *fakeFactory) Factory[*fakeObj] { return factoryOf[*fakeObj](destroyFails{f, errClose}) })
	hd := h.take()
	hd.Value().broken.Store(true) // Validate fails at give-back: destroyed as invalid
	_ = hd.GiveBack()
	h.ev.wait(t, "destroyed", 1)
	if d := got.of(EventDestroyFailed); len(d) != 1 || d[0].Reason != "invalid" || !errors.Is(d[0].Err, errClose) {
		t.Fatalf("destroy_failed events = %+v", d)
	}
	if log := h.log.String(); !strings.Contains(log, `level=WARN msg="destroy failed" pool=pool event=destroy_failed reason=invalid error="close: broken pipe"`) {
		t.Fatalf("log = %s", log)
	}
}

func TestLeakAndHeldTooLongEvents(t *testing.T) {
	var got eventLog
	h := newHarness(t, Config{MaxObjects: 2, Name: "orders", OnEvent: got.add, ValidationInterval: 30 * time.Second,
		LeakCaptureStack: true, HoldThreshold: time.Minute})
	held := h.take()
	takeAndLose(h)
	waitUntil(t, "the lost handle is reclaimed", func() bool {
		runtime.GC()
		return len(got.of(EventLeak)) == 1
	})
	if e := got.of(EventLeak)[0]; !strings.Contains(e.TakenAt, "pool.takeAndLose") || e.Pool != "orders" {
		t.Fatalf("leak event = %+v, want the taker's stack", e)
	}
	h.clk.Tick(t, 2*time.Minute)
	h.ev.wait(t, "tick", 1)
	if e := got.of(EventHeldTooLong)[0]; e.Threshold != time.Minute || e.Held < time.Minute || !strings.Contains(e.TakenAt, "TestLeakAndHeldTooLongEvents") {
		t.Fatalf("held event = %+v", e)
	}
	h.giveBack(held)
	log := h.log.String()
	for _, want := range []string{"level=ERROR msg=" + msgLeak + " pool=orders event=leak_detected taken_at=",
		"level=WARN msg=" + msgHeld + " pool=orders event=held_too_long held="} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// destroyFails is a factory whose Destroy fails.
type destroyFails struct {
	*fakeFactory
	err error
}

func (d destroyFails) Destroy(o *fakeObj) error {
	_ = d.fakeFactory.Destroy(o)
	return d.err
}
