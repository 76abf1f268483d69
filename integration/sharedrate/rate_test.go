package sharedrate

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

// Eight OS processes (this test binary run again), four callers each
// dialing without pause, share a connect rate of 50 a second: measured
// over 10s of Redis's clock once the first second's burst is spent, the
// dials of all of them together, counted in Redis, come within 5% of 50 a
// second (alone, each would dial 50 a second: 400 in all). The window is
// long because the rate is a token bucket holding a second's worth: a
// machine so busy that no process asks for 300ms refills 15 permits, which
// then go at once, rightly (one run in 20 of a 5s window failed so).
func TestEightProcessesShareAConnectRate(t *testing.T) {
	const processes, rate, window = 8, 50, 10 * time.Second
	name := shareName(t)
	rdb := client(t)
	startProcesses(t, processes, name, rate)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers.WaitFor(t, ctx, "the burst spent", func() (bool, error) {
		_, n := snapshot(t, rdb, name)
		return n >= 2*rate, nil
	})
	t0, n0 := snapshot(t, rdb, name)
	<-time.After(window) // the window measured; its length is read from Redis
	t1, n1 := snapshot(t, rdb, name)
	got := float64(n1-n0) / t1.Sub(t0).Seconds()
	t.Logf("%d dials in %v of Redis's clock: %.2f a second", n1-n0, t1.Sub(t0), got)
	if math.Abs(got-rate)/rate > 0.05 {
		t.Fatalf("%.2f dials a second in all; want %d ± 5%%", got, rate)
	}
}

// Redis killed: connection attempts go on without waiting for it, each
// process at its share of the rate (20 a second shared by the two
// processes Redis last counted: 10 a second in each, evenly spaced); once
// Redis is back, the processes count there again.
func TestRedisKilledLeavesEachProcessItsShare(t *testing.T) {
	const rate, timeout = 20, 100 * time.Millisecond
	name := shareName(t)
	a := through(guard(t, name, dbguard.Config{ConnectRate: rate}, timeout), func(context.Context) (int, error) { return 0, nil })
	b := through(guard(t, name, dbguard.Config{ConnectRate: rate}, timeout), func(context.Context) (int, error) { return 0, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, create := range []func(context.Context) (int, error){a, b, a} { // a hears of b from Redis
		if _, err := create(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := rds.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rds.Start(context.Background()) }) // for the next tests, if this one fails first

	start := time.Now()
	if _, err := a(ctx); err != nil {
		t.Fatalf("first attempt with Redis killed: %v", err)
	}
	if first := time.Since(start); first > timeout+time.Second {
		t.Fatalf("the first attempt with Redis killed waited %v; want at most the Timeout, %v (+ slack)", first, timeout)
	}
	for range 14 {
		if _, err := a(ctx); err != nil {
			t.Fatalf("attempt with Redis killed: %v", err)
		}
	}
	// 15 attempts at 10 a second, evenly spaced: 1.4s at least.
	if took := time.Since(start); took < 1400*time.Millisecond {
		t.Fatalf("15 attempts with Redis killed took %v; want at least 1.4s (this process's share, 10 a second)", took)
	}

	if err := rds.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rdb := client(t)
	key := "{respool:rate:" + name + ":}"
	servers.WaitFor(t, ctx, "the rate counted in Redis again", func() (bool, error) {
		if _, err := a(ctx); err != nil {
			return false, err
		}
		n, err := rdb.Exists(ctx, key).Result()
		return n == 1, err
	})
}
