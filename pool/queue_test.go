package pool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Callers waiting for the creation their own Take started do not count
// against MaxQueueSize: while the pool is below MaxObjects nobody is refused.
func TestQueueLimitCountsOnlyCallersWaitingForAGiveBack(t *testing.T) {
	for _, c := range []struct{ maxObjects, maxQueue, callers int }{{8, 1, 4}, {100, 10, 50}} {
		t.Run(fmt.Sprintf("max%d-queue%d-callers%d", c.maxObjects, c.maxQueue, c.callers), func(t *testing.T) {
			h := newHarness(t, Config{MaxObjects: c.maxObjects, MaxQueueSize: c.maxQueue})
			gate := make(chan struct{}) // creations wait, so every caller waits at once
			h.f.set(func(f *fakeFactory) { f.gate = gate })
			results := make(chan takeResult, c.callers)
			for range c.callers {
				go func() {
					hd, err := h.p.Take(context.Background())
					results <- takeResult{hd, err}
				}()
			}
			waitUntil(t, "every caller waits or is refused", func() bool {
				s := h.p.Stats()
				return s.Waiting+int(s.QueueFull) == c.callers
			})
			close(gate)
			for range c.callers {
				r := <-results
				if r.err != nil {
					t.Errorf("Take = %v; want no refusal below MaxObjects", r.err)
					continue
				}
				defer h.giveBack(r.h)
			}
		})
	}
}

// At MaxObjects the limit holds: MaxObjects callers get a creation each,
// MaxQueueSize more wait for a give-back, the rest are refused at once.
func TestQueueLimitAppliesOnceThePoolIsFull(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, MaxQueueSize: 1})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate = gate })
	results := make(chan takeResult, 4)
	for range 4 {
		go func() {
			hd, err := h.p.Take(context.Background())
			results <- takeResult{hd, err}
		}()
	}
	r := <-results // the one refused
	if !errors.Is(r.err, ErrQueueFull) {
		t.Fatalf("first result = %v, want ErrQueueFull", r.err)
	}
	close(gate)
	var held []Handle[*fakeObj]
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		held = append(held, r.h)
	}
	h.giveBack(held[0])
	if r := <-results; r.err != nil {
		t.Fatalf("queued caller: %v", r.err)
	} else {
		h.giveBack(r.h)
	}
	h.giveBack(held[1])
	if s := h.p.Stats(); s.QueueFull != 1 || s.Creates != 2 {
		t.Fatalf("stats = %+v, want 1 refusal and 2 creates", s)
	}
}

// When a slot frees on a full pool, the caller that has waited longest gets
// the new object; a newcomer arriving at that moment queues behind every
// waiter. Each trial parks three waiters, frees a slot and starts a
// newcomer at once, then releases one object at a time.
func TestFreedSlotGoesToTheOldestWaiterNotToANewcomer(t *testing.T) {
	for trial := range 300 {
		ok := t.Run(fmt.Sprint(trial), func(t *testing.T) {
			h := newHarness(t, Config{MaxObjects: 3, MaxQueueSize: 10})
			a, b, c := h.take(), h.take(), h.take()
			w := []chan takeResult{h.waiting(context.Background(), 1), h.waiting(context.Background(), 2), h.waiting(context.Background(), 3)}
			if err := a.Discard(); err != nil {
				t.Fatal(err)
			}
			n := make(chan takeResult, 1)
			go func() {
				hd, err := h.p.Take(context.Background())
				n <- takeResult{hd, err}
			}()
			order := append(w, n)
			names := []string{"W1", "W2", "W3", "N"}
			next := func(i int) Handle[*fakeObj] {
				t.Helper()
				for j, ch := range order {
					if j == i {
						continue
					}
					select {
					case <-ch:
						t.Fatalf("%s served before %s", names[j], names[i])
					default:
					}
				}
				select {
				case r := <-order[i]:
					if r.err != nil {
						t.Fatalf("%s: %v", names[i], r.err)
					}
					return r.h
				case <-time.After(5 * time.Second):
					t.Fatalf("%s not served", names[i])
				}
				return Handle[*fakeObj]{}
			}
			// Only the new object is free: it must go to W1. Then each
			// object given back goes to the next in line.
			w1 := next(0)
			waitUntil(t, "the newcomer waits", func() bool { return blockedInTake(3) })
			h.giveBack(b)
			w2 := next(1)
			h.giveBack(c)
			w3 := next(2)
			h.giveBack(w1)
			nh := next(3)
			for _, hd := range []Handle[*fakeObj]{w2, w3, nh} {
				h.giveBack(hd)
			}
		})
		if !ok {
			return
		}
	}
}
