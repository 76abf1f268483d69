package redisbudget

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/internal/peersig"
	"github.com/respool/respool/resilience/ratelimit"
)

// RateStore returns a ratelimit.Store kept in Redis, for limiters whose
// rate is that of every process sharing cfg.Name (ratelimit.Config.Store,
// dbguard.Config.ConnectRateStore: Share sets it). It counts a
// ratelimit.TokenBucket (the limiters' default; other algorithms are
// refused with an error at their first Take) as a GCRA: one Lua script a
// decision, one round trip, on Redis's clock (TIME), so that the
// processes' clocks need not agree; the state of a key is one number (its
// theoretical arrival time), and the processes that took from it in the
// last minute are counted beside it.
//
// Redis may fail; dials may not: a Take waits at most cfg.Timeout for
// Redis. While Redis does not answer, each process counts alone, at its
// share of the limit: the limit divided by the processes Redis last
// counted taking from the key (so that the sum stays near the limit; the
// whole limit when it never answered), evenly spaced (no burst: a Redis
// that fails now and then lets few permits beyond the limit through); it
// asks Redis again after Timeout, then less often, at least once a second
// (one call at a time, the others counting alone meanwhile), logs once
// when Redis stops answering and once when it answers again. CancelSlot does nothing (a TokenBucket has no
// slots).
func RateStore(cfg ShareConfig) (ratelimit.Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return newRateStore(cfg), nil
}

// rateStore is RateStore's Store.
type rateStore struct {
	c      ShareConfig // with its defaults
	id     string      // this process, in the keys' sets of processes
	health health

	mu       sync.Mutex // guards the following
	retryAt  time.Time  // while Redis is down: when to ask it again
	asking   bool       // a Take asks Redis while it is down
	failures int        // calls to Redis failed in a row
	procs    map[string]int64
	local    map[string]time.Time // while Redis is down: each key's theoretical arrival time
}

func newRateStore(cfg ShareConfig) *rateStore {
	return &rateStore{c: cfg, id: peersig.ProcessID(),
		health: health{name: cfg.Name, what: "counting the rate alone, at this process's share", logger: cfg.Logger},
		procs:  map[string]int64{}, local: map[string]time.Time{}}
}

// redisRetry is how often, at most, a rateStore asks Redis while it does
// not answer: Timeout after the first failure, twice as long after each
// other in a row, up to redisRetry.
const redisRetry = time.Second

// procsWindow is how long a process that took from a key counts in the
// share of its limit each process keeps while Redis is down.
const procsWindow = time.Minute

// takeScript takes ARGV[3] permits of the GCRA KEYS[1] whose interval is
// ARGV[1] µs a permit and whose burst is ARGV[2] permits, at Redis's TIME,
// and notes the process ARGV[4] in KEYS[2]. It returns {1, remaining,
// processes} when taken, {0, µs until they could be, processes} when not.
// Times are µs since the epoch, as doubles (exact below 2⁵³: the year
// 2255), written with 17 digits so that they read back as they were.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, burst, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], now, ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[2], math.ceil(tonumber(ARGV[5]) / 1000))
local procs = redis.call('ZCARD', KEYS[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new = tat + n * interval
local allowAt = new - burst * interval
if allowAt > now then
  return {0, string.format('%.17g', allowAt - now), procs}
end
redis.call('SET', KEYS[1], string.format('%.17g', new), 'PX', math.ceil((new - now) / 1000) + 1)
return {1, string.format('%.17g', math.floor((now - allowAt) / interval)), procs}
`)

// drainScript takes every permit of the GCRA KEYS[1] (interval ARGV[1] µs,
// burst ARGV[2]) until they refill.
var drainScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local full = now + tonumber(ARGV[1]) * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < full then
  redis.call('SET', KEYS[1], string.format('%.17g', full), 'PX', math.ceil((full - now) / 1000) + 1)
end
return 1
`)

// keys returns the Redis keys of key: its GCRA, and its processes (one
// hash slot, for Redis Cluster).
func (s *rateStore) keys(key string) []string {
	k := "{respool:rate:" + s.c.Name + ":" + key + "}"
	return []string{k, k + ":procs"}
}

// gcra returns lim's interval in µs a permit and its burst, or an error
// for an algorithm the store does not count.
func gcra(lim ratelimit.Limit) (interval float64, burst int64, err error) {
	if lim.Algorithm != ratelimit.TokenBucket {
		return 0, 0, fmt.Errorf("redisbudget: the Redis rate store counts a token bucket only, not a %v", lim.Algorithm)
	}
	permits, period := max(lim.Permits, 1), max(lim.Period, time.Nanosecond)
	if burst = lim.Burst; burst <= 0 {
		burst = permits
	}
	return float64(period) / 1e3 / float64(permits), burst, nil
}

// Take implements ratelimit.Store on Redis, or, while it does not answer,
// alone (see RateStore).
func (s *rateStore) Take(ctx context.Context, key string, n int64, lim ratelimit.Limit, now time.Time, _ time.Duration) (ratelimit.Decision, error) {
	interval, burst, err := gcra(lim)
	switch {
	case err != nil:
		return ratelimit.Decision{}, err
	case n > burst:
		return ratelimit.Decision{RetryAfter: -1}, nil
	case !s.ask(now):
		return s.takeAlone(key, n, lim, now), nil
	}
	call, cancel := context.WithTimeout(ctx, s.c.Timeout)
	out, err := takeScript.Run(call, s.c.Client, s.keys(key), fmtFloat(interval), burst, n, s.id,
		procsWindow.Microseconds()).Slice()
	cancel()
	if err == nil {
		err = checkReply(out)
	}
	if err != nil {
		if ctx.Err() != nil { // the caller's end, not Redis's silence
			s.asked(now, false)
			return ratelimit.Decision{}, fmt.Errorf("redisbudget %s: %w", s.c.Name, context.Cause(ctx))
		}
		s.failed(now, err)
		return s.takeAlone(key, n, lim, now), nil
	}
	s.answered(key, out[2].(int64))
	v, _ := strconv.ParseFloat(out[1].(string), 64)
	if out[0].(int64) == 1 {
		return ratelimit.Decision{OK: true, Remaining: int64(v)}, nil
	}
	return ratelimit.Decision{RetryAfter: time.Duration(math.Ceil(v * 1e3))}, nil
}

// checkReply checks the shape of takeScript's reply.
func checkReply(out []any) error {
	if len(out) == 3 {
		_, ok0 := out[0].(int64)
		_, ok1 := out[1].(string)
		_, ok2 := out[2].(int64)
		if ok0 && ok1 && ok2 {
			return nil
		}
	}
	return fmt.Errorf("redisbudget: unexpected reply from the rate script: %v", out)
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// Drain implements ratelimit.Store: every permit of key is taken until
// they refill, in Redis, or, while it does not answer, alone.
func (s *rateStore) Drain(ctx context.Context, key string, lim ratelimit.Limit, now time.Time) error {
	interval, burst, err := gcra(lim)
	if err != nil {
		return err
	}
	call, cancel := context.WithTimeout(ctx, s.c.Timeout)
	err = drainScript.Run(call, s.c.Client, s.keys(key)[:1], fmtFloat(interval), burst).Err()
	cancel()
	if err == nil {
		return nil
	}
	s.mu.Lock()
	s.local[key] = now.Add(localInterval(lim, s.shareLocked(key)))
	s.mu.Unlock()
	return fmt.Errorf("redisbudget %s: draining the rate in Redis (drained in this process): %w", s.c.Name, err)
}

// CancelSlot implements ratelimit.Store: it does nothing (a token bucket
// has no slots).
func (s *rateStore) CancelSlot(context.Context, string, int64, ratelimit.Limit, time.Time, time.Duration) error {
	return nil
}

// ask reports whether a Take at now asks Redis: always while it answers;
// while it does not, one Take at a time, once its retry delay has passed
// since the last failure (see redisRetry).
func (s *rateStore) ask(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retryAt.IsZero() {
		return true
	}
	if s.asking || now.Before(s.retryAt) {
		return false
	}
	s.asking = true
	return true
}

// asked ends a Take's asking; failed says Redis did not answer.
func (s *rateStore) asked(now time.Time, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asking = false
	if failed {
		s.failures++
		s.retryAt = now.Add(min(s.c.Timeout<<min(s.failures-1, 20), redisRetry))
	}
}

// failed notes that Redis did not answer a Take at now.
func (s *rateStore) failed(now time.Time, err error) {
	s.asked(now, true)
	s.health.failed(err)
}

// answered notes that Redis answered a Take of key, counting procs
// processes that took from it lately: the counting alone ends.
func (s *rateStore) answered(key string, procs int64) {
	s.mu.Lock()
	s.asking, s.failures = false, 0
	s.retryAt = time.Time{}
	s.procs[key] = procs
	clear(s.local)
	s.mu.Unlock()
	s.health.answered()
}

// shareLocked is how many processes share key's limit, as Redis last
// counted them; at least 1.
func (s *rateStore) shareLocked(key string) int64 { return max(s.procs[key], 1) }

// localInterval is the interval between permits of lim's share of one of
// share processes, rounded up.
func localInterval(lim ratelimit.Limit, share int64) time.Duration {
	permits, period := max(lim.Permits, 1), max(lim.Period, time.Nanosecond)
	return time.Duration((int64(period)*share + permits - 1) / permits)
}

// takeAlone takes n permits of key at now from this process's share of
// lim, evenly spaced: without a burst, so that a Redis that fails now and
// then lets few permits beyond the limit through.
func (s *rateStore) takeAlone(key string, n int64, lim ratelimit.Limit, now time.Time) ratelimit.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	interval := localInterval(lim, s.shareLocked(key))
	burst := n
	tat, ok := s.local[key]
	if !ok || tat.Before(now) {
		tat = now
	}
	next := tat.Add(time.Duration(n) * interval)
	allowAt := next.Add(-time.Duration(burst) * interval)
	if allowAt.After(now) {
		return ratelimit.Decision{RetryAfter: allowAt.Sub(now)}
	}
	s.local[key] = next
	return ratelimit.Decision{OK: true, Remaining: int64(now.Sub(allowAt) / interval)}
}
