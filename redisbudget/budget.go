package redisbudget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/pool"
)

// Config configures a Budget. Client, Name and Max are required; the zero
// values of the others are their documented defaults.
type Config struct {
	// Client reaches the Redis every process of the budget shares.
	Client redis.UniversalClient
	// Name names the budget: its leases are the sorted set
	// "respool:budget:"+Name. Every process sharing a database's
	// connections gives the same Name and Max.
	Name string
	// Max is the number of slots (connections) in all, across every
	// process. At least 1.
	Max int
	// TTL is how long a lease lives without renewal: a dead process's
	// slots come back within it. Leases are renewed every TTL/3. Zero: 3s;
	// at least 30ms (and at least 3 Timeouts).
	TTL time.Duration
	// Timeout bounds each call to Redis: an Acquire waits at most this for
	// it. Zero: 100ms; at most TTL/3.
	Timeout time.Duration
	// Logger gets one line when Redis stops answering and one when it
	// answers again. Nil: slog.Default().
	Logger *slog.Logger
}

// Stats is a snapshot of a Budget.
type Stats struct {
	Held         int    // slots this process holds (its connections, and those being opened)
	Unregistered int    // of those, the ones not leased in Redis: taken while it did not answer, or lost
	StoreDown    bool   // the last call to Redis failed
	Refused      uint64 // Acquires refused: every slot taken (or, while Redis is down, every slot held before)
	StoreErrors  uint64 // calls to Redis that failed
}

// Budget is a pool.Budget shared through Redis; see the package
// documentation. It is safe for concurrent use. Close it when its pools
// are closed.
type Budget struct {
	c     Config
	key   string
	id    string // this process's prefix of its leases' names
	stop  chan struct{}
	done  chan struct{}
	close sync.Once

	mu     sync.Mutex
	next   uint64
	leases map[string]bool // the slots held: a lease's name, and whether Redis holds it
	down   bool            // Redis did not answer the last call
	known  int             // the slots held when Redis last answered: while down, the most it holds
	closed bool

	refused, storeErrors uint64 // see Stats
}

var _ pool.Budget = (*Budget)(nil)

// New checks cfg and starts the Budget's renewal of its leases.
func New(cfg Config) (*Budget, error) {
	if cfg.TTL == 0 {
		cfg.TTL = 3 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	const mechanism = "redisbudget"
	if err := resil.FirstError(
		resil.Check(cfg.Client != nil, mechanism, "Client", "<nil>", "a redis.UniversalClient"),
		resil.Check(cfg.Name != "", mechanism, "Name", `""`, "a name every process of the budget gives"),
		resil.Check(cfg.Max >= 1, mechanism, "Max", cfg.Max, "an integer ≥ 1"),
		resil.Check(cfg.TTL >= 30*time.Millisecond, mechanism, "TTL", cfg.TTL, "at least 30ms, or 0 for 3s"),
		resil.Check(cfg.Timeout > 0 && cfg.Timeout <= cfg.TTL/3, mechanism, "Timeout", cfg.Timeout,
			"a positive duration at most TTL/3 (a renewal must end before the next), or 0 for 100ms"),
	); err != nil {
		return nil, err
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	host, _ := os.Hostname()
	b := &Budget{c: cfg, key: "respool:budget:" + cfg.Name, id: host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(r[:]),
		stop: make(chan struct{}), done: make(chan struct{}), leases: map[string]bool{}}
	go b.renewEvery(cfg.TTL / 3)
	return b, nil
}

// acquireScript takes a lease (ARGV[3]) for ARGV[2] ms when fewer than
// ARGV[1] live leases exist, after dropping the expired ones; 1 if taken.
// Expiry is on Redis's clock, so that the processes' clocks need not agree.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
return 1
`)

// renewScript extends each lease of ARGV[3:] by ARGV[2] ms, taking again
// one that expired (or was never taken) when fewer than ARGV[1] live leases
// exist; per lease, 1 if Redis holds it now.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = now + tonumber(ARGV[2])
local max = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local out = {}
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) or redis.call('ZCARD', KEYS[1]) < max then
    redis.call('ZADD', KEYS[1], exp, ARGV[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
`)

// Acquire takes a slot: a lease in Redis, or, while Redis does not answer
// within Timeout, one of the slots held when it last did. Its error
// matches pool.ErrBudgetExhausted when none is free.
func (b *Budget) Acquire(ctx context.Context) (release func(), err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("redisbudget: closed")
	}
	b.next++
	name := b.id + ":" + strconv.FormatUint(b.next, 10)
	b.mu.Unlock()

	call, cancel := context.WithTimeout(ctx, b.c.Timeout)
	taken, err := acquireScript.Run(call, b.c.Client, []string{b.key}, b.c.Max, b.c.TTL.Milliseconds(), name).Int()
	cancel()
	if err != nil && ctx.Err() != nil { // the caller's end, not Redis's silence
		return nil, fmt.Errorf("redisbudget %s: %w", b.c.Name, ctx.Err())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		b.failed(err)
		if len(b.leases) >= b.known {
			b.refused++
			return nil, fmt.Errorf("redisbudget %s: Redis does not answer (%v): holding the %d slots held before: %w",
				b.c.Name, err, b.known, pool.ErrBudgetExhausted)
		}
		b.leases[name] = false // registered when Redis answers again (renew)
	case taken == 0:
		b.answered()
		b.refused++
		return nil, fmt.Errorf("redisbudget %s: all %d slots taken: %w", b.c.Name, b.c.Max, pool.ErrBudgetExhausted)
	default:
		b.leases[name] = true
		b.answered()
	}
	var once sync.Once
	return func() { once.Do(func() { b.release(name) }) }, nil
}

// release gives the lease name back.
func (b *Budget) release(name string) {
	b.mu.Lock()
	registered, ok := b.leases[name]
	delete(b.leases, name)
	b.mu.Unlock()
	if !ok || !registered {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
	defer cancel()
	err := b.c.Client.ZRem(ctx, b.key, name).Err()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.failed(err) // the lease expires within TTL
		return
	}
	b.answered()
}

// failed notes a call to Redis that failed (b.mu held): the first of a run
// is logged; Acquire keeps within known meanwhile.
func (b *Budget) failed(err error) {
	b.storeErrors++
	if b.down {
		return
	}
	b.down = true
	b.c.Logger.Warn("redisbudget: Redis does not answer: keeping within the slots held",
		slog.String("budget", b.c.Name), slog.Int("held", b.known), slog.String("error", err.Error()))
}

// answered notes a call to Redis that succeeded (b.mu held), after the
// leases it changed.
func (b *Budget) answered() {
	b.known = len(b.leases)
	if !b.down {
		return
	}
	b.down = false
	b.c.Logger.Info("redisbudget: Redis answers again", slog.String("budget", b.c.Name), slog.Int("held", len(b.leases)))
}

// renewEvery renews the leases every d until Close.
func (b *Budget) renewEvery(d time.Duration) {
	defer close(b.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.renew()
		}
	}
}

// renew extends every lease held and registers those Redis does not hold.
func (b *Budget) renew() {
	b.mu.Lock()
	names := make([]any, 0, len(b.leases)+2)
	names = append(names, b.c.Max, b.c.TTL.Milliseconds())
	for name := range b.leases {
		names = append(names, name)
	}
	b.mu.Unlock()
	if len(names) == 2 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
	held, err := renewScript.Run(ctx, b.c.Client, []string{b.key}, names...).Int64Slice()
	cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.failed(err)
		return
	}
	b.answered()
	var orphans []any // given back while the renewal ran: it may have taken them again
	for i, h := range held {
		name := names[i+2].(string)
		if _, ok := b.leases[name]; ok {
			b.leases[name] = h == 1
		} else if h == 1 {
			orphans = append(orphans, name)
		}
	}
	if len(orphans) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
		_ = b.c.Client.ZRem(ctx, b.key, orphans...).Err() // else they expire within TTL
		cancel()
	}
}

// Stats returns a snapshot of the Budget.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{Held: len(b.leases), StoreDown: b.down, Refused: b.refused, StoreErrors: b.storeErrors}
	for _, registered := range b.leases {
		if !registered {
			s.Unregistered++
		}
	}
	return s
}

// Close stops renewing and gives back the leases still held (call it after
// the pools using the Budget are closed). Acquire fails after it.
func (b *Budget) Close() error {
	var err error
	b.close.Do(func() {
		close(b.stop)
		<-b.done
		b.mu.Lock()
		b.closed = true
		names := make([]any, 0, len(b.leases))
		for name, registered := range b.leases {
			if registered {
				names = append(names, name)
			}
		}
		clear(b.leases)
		b.mu.Unlock()
		if len(names) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
			defer cancel()
			err = b.c.Client.ZRem(ctx, b.key, names...).Err()
		}
	})
	return err
}
