package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
)

// TestStressTransitionsAndTrials hammers a breaker from many goroutines
// while the clock moves, with failures, slow calls, ignored errors and inner
// rejections mixed in, and checks what must hold whatever the interleaving:
// the transitions form one chain (each starts where the last ended, along
// the state machine's edges); no generation of HalfOpen holds more than
// HalfOpenCalls trials (an ignored or inner-rejected trial gives its permit
// back); and once everything has ended, the window's
// counters equal what its ring holds.
func TestStressTransitionsAndTrials(t *testing.T) {
	for _, win := range []WindowKind{CountWindow, TimeWindow} {
		t.Run([]string{"count", "time"}[win], func(t *testing.T) {
			clk := clocktest.New(time.Time{})
			var mu sync.Mutex // guards the following
			var chain []resilience.Event
			trials := map[uint64]int{}
			const halfOpenCalls = 3
			b, err := New(Config{Clock: clk, Window: win, WindowSize: 20, WindowDuration: time.Second,
				MinimumCalls: 10, HalfOpenCalls: halfOpenCalls, HalfOpenMaxWait: 300 * time.Millisecond,
				SlowCallDuration: 50 * time.Millisecond, SlowCallRate: 0.8,
				OpenDelay: delay.Exponentials(100*time.Millisecond, time.Second),
				Listener: func(e resilience.Event) {
					if e.Kind == resilience.EventStateChange {
						mu.Lock()
						chain = append(chain, e)
						mu.Unlock()
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			errDown := errors.New("down")
			inner := resil.Reject("ratelimit", "", errors.New("limited"), time.Time{}, time.Time{})
			stop := make(chan struct{})
			var ticker sync.WaitGroup
			ticker.Add(1)
			go func() { // the clock moves while calls run
				defer ticker.Done()
				for {
					select {
					case <-stop:
						return
					default:
						clk.Advance(7 * time.Millisecond)
					}
				}
			}()
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 7))
					for range 1000 {
						p, err := b.Enter(context.Background())
						if err != nil {
							continue
						}
						w := word(p.Token)
						if w.state() == HalfOpen {
							mu.Lock()
							trials[w.gen()]++
							n := trials[w.gen()]
							mu.Unlock()
							if n > halfOpenCalls {
								t.Errorf("generation %d holds %d trials; want at most %d", w.gen(), n, halfOpenCalls)
							}
						}
						var out error
						switch r := rng.IntN(10); {
						case r < 4: // 4 failures in 8 recorded: around the threshold
							out = errDown
						case r == 4:
							out = context.Canceled
						case r == 5:
							out = inner
						}
						if w.state() == HalfOpen && (out == context.Canceled || out == inner) {
							mu.Lock()
							trials[w.gen()]-- // given back before Exit returns it
							mu.Unlock()
						}
						b.Exit(p, out)
					}
				}()
			}
			wg.Wait()
			close(stop)
			ticker.Wait()

			edges := map[string]bool{"closed>open": true, "open>half_open": true, "half_open>closed": true, "half_open>open": true}
			from := "closed"
			for i, e := range chain {
				if e.From != from || !edges[e.From+">"+e.To] {
					t.Fatalf("transition %d: %s>%s after reaching %s", i, e.From, e.To, from)
				}
				from = e.To
			}
			t.Logf("%d transitions, %d half-open generations", len(chain), len(trials))
			if len(chain) < 3 {
				t.Fatalf("only %d transitions: the test exercised little", len(chain))
			}
			if cw, ok := b.win.Load().window.(*countWindow); ok {
				var calls, failures, slow int64
				for i := range cw.ring {
					o := outcome(cw.ring[i].Load())
					if o != 0 {
						calls++
					}
					failures += o.failures()
					slow += o.slows()
				}
				if got := cw.tally(0); got != (tally{calls, failures, slow}) {
					t.Fatalf("counters %+v; the ring holds %+v", got, tally{calls, failures, slow})
				}
			}
		})
	}
}
