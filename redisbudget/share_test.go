package redisbudget_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/redisbudget"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

// A bad ShareConfig is refused by Share and RateStore, each bad field named
// with what is accepted; Share leaves the dbguard.Config alone then, and
// refuses one it has joined already.
func TestShareRefusesABadConfig(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer rdb.Close()
	blind := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer blind.Close()
	for _, c := range []struct {
		cfg   redisbudget.ShareConfig
		field string
	}{
		{redisbudget.ShareConfig{Name: "n"}, "Client"},
		{redisbudget.ShareConfig{Client: blind, Name: "n"}, "Client"}, // ignores deadlines
		{redisbudget.ShareConfig{Client: rdb}, "Name"},
		{redisbudget.ShareConfig{Client: rdb, Name: "n", Timeout: -time.Second}, "Timeout"},
	} {
		var gc dbguard.Config
		err := redisbudget.Share(&gc, c.cfg)
		s, serr := redisbudget.RateStore(c.cfg)
		for _, err := range []error{err, serr} {
			var ce *resilience.ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%+v: %v; want a ConfigError naming %s", c.cfg, err, c.field)
			}
		}
		if s != nil || gc.Join != nil || gc.ConnectRateStore != nil {
			t.Errorf("%+v: store %v, Config %+v; want neither set", c.cfg, s, gc)
		}
	}
	var gc dbguard.Config
	cfg := redisbudget.ShareConfig{Client: rdb, Name: "n"}
	if err := redisbudget.Share(&gc, cfg); err != nil || gc.Join == nil || gc.ConnectRateStore == nil {
		t.Fatalf("Share: %v, Config %+v; want Join and ConnectRateStore set", err, gc)
	}
	if err := redisbudget.Share(&gc, cfg); err == nil || !strings.Contains(err.Error(), "Join") {
		t.Fatalf("Share of a Config joined already: %v; want an error naming Join", err)
	}
}

// unreachable is a Redis client whose dials fail at once; the count is of
// the commands it is asked to send.
func unreachable(t *testing.T) (*redis.Client, *atomic.Int64) {
	var asked atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: "redis.invalid:6379", MaxRetries: -1, ContextTimeoutEnabled: true,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("dial refused (test)")
		}})
	rdb.AddHook(counting{&asked})
	t.Cleanup(func() { rdb.Close() })
	return rdb, &asked
}

// counting is a redis.Hook counting the commands sent.
type counting struct{ n *atomic.Int64 }

func (counting) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c counting) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (counting) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// While Redis does not answer, the rate store counts alone: a process that
// never reached Redis keeps the whole limit (5 a second), evenly spaced
// (the first at once, the next 200ms later), asks Redis again only after
// Timeout (one call at a time), and logs one line for the whole outage.
func TestRateStoreCountsAloneWhileRedisIsDown(t *testing.T) {
	rdb, asked := unreachable(t)
	var logged lockedBuffer
	s, err := redisbudget.RateStore(redisbudget.ShareConfig{Client: rdb, Name: "down",
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	lim := ratelimit.Limit{Permits: 5, Period: time.Second, Burst: 5}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	if d, err := s.Take(ctx, "", 1, lim, now, 0); err != nil || !d.OK {
		t.Fatalf("take with Redis down: %+v, %v; want it granted", d, err)
	}
	first := asked.Load()
	for i := range 3 {
		if d, err := s.Take(ctx, "", 1, lim, now.Add(time.Duration(i)*time.Millisecond), 0); err != nil || d.OK ||
			d.RetryAfter != 200*time.Millisecond-time.Duration(i)*time.Millisecond {
			t.Fatalf("take %d, %dms after the first: %+v, %v; want it refused until 200ms after the first", i+2, i, d, err)
		}
	}
	if n := asked.Load(); n != first {
		t.Fatalf("%d commands for takes within the Timeout of the failure; want %d, the first take's", n, first)
	}
	now = now.Add(time.Second)
	if d, err := s.Take(ctx, "", 1, lim, now, 0); err != nil || !d.OK {
		t.Fatalf("take a second later: %+v, %v; want it granted", d, err)
	}
	if n := asked.Load(); n <= first {
		t.Fatalf("%d commands after a second; want more than %d (Redis asked again)", n, first)
	}
	if n := strings.Count(logged.String(), "Redis does not answer"); n != 1 {
		t.Fatalf("logged %d lines for the outage; want 1:\n%s", n, logged.String())
	}
	if d, err := s.Take(ctx, "", 6, lim, now, 0); err != nil || d.RetryAfter >= 0 {
		t.Fatalf("6 permits of a burst of 5: %+v, %v; want RetryAfter < 0 (never)", d, err)
	}
	if _, err := s.Take(ctx, "", 1, ratelimit.Limit{Algorithm: ratelimit.SlidingLog, Permits: 5, Period: time.Second}, now, 0); err == nil ||
		!strings.Contains(err.Error(), "token bucket") {
		t.Fatalf("a sliding log: %v; want an error naming the token bucket", err)
	}
}

// A Redis that accepts connections and never answers holds a Take for its
// Timeout at most: the attempt is then counted alone.
func TestRateStoreWaitsForASilentRedisNoLongerThanTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	stop := make(chan struct{})
	conns.Add(1)
	go func() { // accept, and read nothing
		defer conns.Done()
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				<-stop
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	defer func() { ln.Close(); close(stop); conns.Wait() }()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	const timeout = 50 * time.Millisecond
	s, err := redisbudget.RateStore(redisbudget.ShareConfig{Client: rdb, Name: "silent", Timeout: timeout,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := s.Take(context.Background(), "", 1, ratelimit.Limit{Permits: 5, Period: time.Second}, time.Now(), 0)
	// The bound asserted is the Timeout and what a busy machine adds to a
	// timer; before the fallback a Take waited for Redis as long as its
	// caller's context allowed.
	if elapsed := time.Since(start); err != nil || !d.OK || elapsed > timeout+time.Second {
		t.Fatalf("take with Redis silent: %+v, %v after %v; want it granted within %v (+ slack)", d, err, elapsed, timeout)
	}
}
