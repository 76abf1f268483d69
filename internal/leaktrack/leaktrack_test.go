package leaktrack

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

//go:noinline
func captureHere() *Site { return Capture(0) }

func TestCaptureNamesTheCaller(t *testing.T) {
	s := captureHere().String()
	if !strings.HasPrefix(s, "github.com/respool/respool/internal/leaktrack.captureHere\n") || !strings.Contains(s, "leaktrack_test.go:") {
		t.Fatalf("stack = %q, want captureHere first with its file", s)
	}
	if got := (*Site)(nil).String(); !strings.Contains(got, "not captured") {
		t.Fatalf("nil Site = %q", got)
	}
}

//go:noinline
func dropToken(lost chan int) {
	Watch(&Token{Lease: 1}, 42, func(v int) { lost <- v })
}

func TestWatchRunsOnceTheTokenIsUnreachable(t *testing.T) {
	lost := make(chan int, 1)
	dropToken(lost)
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		select {
		case v := <-lost:
			if v != 42 {
				t.Fatalf("lost(%d), want 42", v)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("cleanup never ran")
		}
		runtime.Gosched()
	}
}

func TestOnGCRunsAfterEachCollectionUntilToldToStop(t *testing.T) {
	calls := make(chan int, 16)
	n := 0
	OnGC(func() bool {
		n++
		calls <- n
		return n < 3
	})
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < 3; {
		runtime.GC()
		select {
		case got = <-calls:
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("OnGC ran %d times, want 3", got)
		}
	}
	for range 3 {
		runtime.GC()
	}
	select {
	case n := <-calls:
		t.Fatalf("OnGC ran a %dth time after its function said stop", n)
	case <-time.After(50 * time.Millisecond):
	}
}
