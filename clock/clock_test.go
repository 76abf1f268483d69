package clock_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// System() is one comparable value of no size: comparing a Clock with it is
// how the pool and the mechanisms pick their fast path, and it costs
// nothing to store.
func TestSystemIsOneComparableZeroSizeValue(t *testing.T) {
	a, b := clock.System(), clock.System()
	if a != b {
		t.Fatal("System() != System()")
	}
	if n := testing.AllocsPerRun(100, func() { _ = clock.System() }); n != 0 {
		t.Fatalf("System() allocates %v times", n)
	}
	var fake clock.Clock = fakeClock{}
	if fake == a {
		t.Fatal("another Clock compares equal to System()")
	}
}

type fakeClock struct{ clock.Clock }

func TestSystemTimersTickersAndAfterFunc(t *testing.T) {
	c := clock.System()
	tm := c.NewTimer(time.Hour)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset of a stopped timer reported it active")
	}
	<-tm.C()
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	<-tk.C()
	tk.Stop()
	done := make(chan struct{})
	af := c.AfterFunc(0, func() { close(done) })
	<-done
	if af.C() != nil {
		t.Fatal("an AfterFunc timer has a channel")
	}
	if d := c.Since(c.Now().Add(-time.Hour)); d < time.Hour {
		t.Fatalf("Since an hour ago = %v", d)
	}
}
