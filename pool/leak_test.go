package pool

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
)

//go:noinline
func takeAndLose(h *harness) {
	hd := h.take()
	_ = hd.Value()
}

func TestLostHandleIsReportedAndItsSlotFreed(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, Name: "orders", LeakCaptureStack: true})
	takeAndLose(h)
	waitUntil(t, "the lost handle is reclaimed", func() bool {
		runtime.GC()
		return h.p.Stats().LeaksDetected == 1
	})
	h.ev.wait(t, "destroyed", 1)
	log := h.log.String()
	if strings.Count(log, msgLeak) != 1 || !strings.Contains(log, "pool.takeAndLose") || !strings.Contains(log, "pool=orders") {
		t.Fatalf("log = %q, want one %s naming takeAndLose and pool=orders", log, msgLeak)
	}
	if s := h.p.Stats(); s.Destroys.Leaked != 1 {
		t.Fatalf("leaked destroys = %d, want 1", s.Destroys.Leaked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	hd, err := h.p.Take(ctx) // MaxObjects 1: only possible if the slot was freed
	if err != nil {
		t.Fatalf("Take after the leak = %v", err)
	}
	h.giveBack(hd)
}

func TestHandleGivenBackIsNeverReportedLost(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	for range 100 {
		h.giveBack(h.take())
	}
	a := h.take()
	runtime.GC()
	runtime.GC()
	h.giveBack(a)
	if s := h.p.Stats(); s.LeaksDetected != 0 {
		t.Fatalf("%d leaks reported for handles given back", s.LeaksDetected)
	}
}

func TestHeldTooLongIsReportedOnceWithTheTakersStack(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, ValidationInterval: 30 * time.Second, Name: "orders",
		LeakCaptureStack: true, HoldThreshold: time.Minute})
	a := h.take()
	h.clk.Tick(t, 30*time.Second)
	h.ev.wait(t, "tick", 1)
	if h.p.Stats().HeldTooLong != 0 {
		t.Fatal("reported after 30 s, threshold 1 m")
	}
	h.clk.Tick(t, 30*time.Second)
	h.clk.Tick(t, 30*time.Second)
	h.ev.wait(t, "tick", 2)
	if n := h.p.Stats().HeldTooLong; n != 1 {
		t.Fatalf("held-too-long reports = %d, want exactly 1", n)
	}
	log := h.log.String()
	if !strings.Contains(log, msgHeld) || !strings.Contains(log, "TestHeldTooLongIsReportedOnceWithTheTakersStack") || !strings.Contains(log, "pool=orders") {
		t.Fatalf("log = %q, want %s with the taker's stack", log, msgHeld)
	}
	h.giveBack(a)
	// A new take starts a new hold.
	b := h.take()
	h.clk.Tick(t, 2*time.Minute)
	h.ev.wait(t, "tick", 1)
	if n := h.p.Stats().HeldTooLong; n != 2 {
		t.Fatalf("held-too-long reports = %d, want 2 after a second long hold", n)
	}
	h.giveBack(b)
}

// A copy of an earlier lease's Handle, kept alive, does not hide the loss
// of a later lease of the same object.
func TestStaleCopyOfAnOldHandleDoesNotHideALaterLeak(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, LeakCaptureStack: true})
	stale := h.take()
	h.giveBack(stale) // stale stays reachable: a copy of lease 1's Handle
	takeAndLose(h)    // lease 2 is lost
	waitUntil(t, "the lost lease is reclaimed", func() bool {
		runtime.GC()
		return h.p.Stats().LeaksDetected == 1
	})
	if err := stale.GiveBack(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("GiveBack(stale) = %v, want ErrAlreadyReturned", err)
	}
}

//go:noinline
func loseAHandle(p *Pool[*fakeObj]) {
	h, err := p.Take(context.Background())
	if err != nil {
		panic(err)
	}
	_ = h.Value()
}

// Close collects garbage to find handles that were lost, instead of waiting
// for a collection that may never come.
func TestCloseFindsLostHandles(t *testing.T) {
	f := &fakeFactory{}
	var log logBuffer
	p, err := New[*fakeObj](factoryOf[*fakeObj](f), Config{MaxObjects: 2, Clock: newFakeClock(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	loseAHandle(p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want the lost handle found", err)
	}
	if s := p.Stats(); s.LeaksDetected != 1 || s.Destroys.Leaked != 1 || f.live.Load() != 0 {
		t.Fatalf("stats = %+v, live %d; want the lost object reclaimed and destroyed", s, f.live.Load())
	}
	if !strings.Contains(log.String(), msgLeak) {
		t.Fatalf("log = %q, want %s", log.String(), msgLeak)
	}
}
