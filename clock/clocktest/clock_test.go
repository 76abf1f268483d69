package clocktest_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTimersFireInOrderAtTheirDeadlines(t *testing.T) {
	clk := clocktest.New(time.Time{})
	start := clk.Now()
	var fired []time.Duration
	clk.AfterFunc(3*time.Second, func() { fired = append(fired, clk.Now().Sub(start)) })
	clk.AfterFunc(time.Second, func() { fired = append(fired, clk.Now().Sub(start)) })
	tm := clk.NewTimer(2 * time.Second)
	if next, ok := clk.Next(); !ok || !next.Equal(start.Add(time.Second)) {
		t.Fatalf("Next = %v, %v; want start+1s", next, ok)
	}
	clk.Advance(5 * time.Second)
	if len(fired) != 2 || fired[0] != time.Second || fired[1] != 3*time.Second {
		t.Fatalf("AfterFunc fired at %v; want [1s 3s]", fired)
	}
	select {
	case at := <-tm.C():
		if at.Sub(start) != 2*time.Second {
			t.Fatalf("timer fired at %v; want 2s", at.Sub(start))
		}
	default:
		t.Fatal("timer did not fire")
	}
	if got := clk.Now().Sub(start); got != 5*time.Second {
		t.Fatalf("clock at %v; want 5s", got)
	}
}

func TestStopAndReset(t *testing.T) {
	clk := clocktest.New(time.Time{})
	tm := clk.NewTimer(time.Second)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	clk.Advance(2 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	tm.Reset(time.Second)
	if next, ok := clk.Next(); !ok || !next.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("Next = %v, %v; want now+1s", next, ok)
	}
	clk.Advance(time.Second)
	<-tm.C()
}

func TestWaitTimers(t *testing.T) {
	clk := clocktest.New(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-clk.NewTimer(time.Minute).C()
	}()
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	<-done
}

func TestDueTimerFiresAtOnce(t *testing.T) {
	clk := clocktest.New(time.Time{})
	tm := clk.NewTimer(0)
	select {
	case <-tm.C():
	default:
		t.Fatal("a timer due at once did not fire at once")
	}
	done := make(chan struct{})
	clk.AfterFunc(-time.Second, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a due AfterFunc did not run")
	}
}

func TestTickerFiresEveryPeriodUntilStopped(t *testing.T) {
	clk := clocktest.New(time.Time{})
	start := clk.Now()
	tk := clk.NewTicker(time.Second)
	for i := 1; i <= 3; i++ {
		clk.Advance(time.Second)
		select {
		case at := <-tk.C():
			if at.Sub(start) != time.Duration(i)*time.Second {
				t.Fatalf("tick %d at %v; want %ds", i, at.Sub(start), i)
			}
		default:
			t.Fatalf("tick %d did not fire", i)
		}
	}
	tk.Stop()
	clk.Advance(time.Minute)
	select {
	case <-tk.C():
		t.Fatal("a stopped ticker ticked")
	default:
	}
	if _, ok := clk.Next(); ok {
		t.Fatal("a stopped ticker is still pending")
	}
}

// Ticks that fall while the last one waits to be received are dropped, as
// with time.Ticker, and the ticker keeps its phase.
func TestTickerDropsTicksNobodyReceives(t *testing.T) {
	clk := clocktest.New(time.Time{})
	start := clk.Now()
	tk := clk.NewTicker(time.Second)
	defer tk.Stop()
	clk.Advance(time.Hour + 500*time.Millisecond)
	if at := <-tk.C(); at.Sub(start) != time.Second {
		t.Fatalf("the tick kept is from %v; want the first, 1s", at.Sub(start))
	}
	select {
	case <-tk.C():
		t.Fatal("more than one tick was kept")
	default:
	}
	if next, _ := clk.Next(); next.Sub(start) != time.Hour+time.Second {
		t.Fatalf("next tick at %v; want 1h0m1s", next.Sub(start))
	}
}

func TestTickerOfNoPeriodPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewTicker(0) did not panic")
		}
	}()
	clocktest.New(time.Time{}).NewTicker(0)
}
