package redisbudget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/internal/reclaim"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/pool"
)

// Config configures a Budget. Client, Name and Max are required; the zero
// values of the others are their documented defaults.
type Config struct {
	// Client reaches the Redis every process of the budget shares. Its
	// Options must set ContextTimeoutEnabled, so that each call ends at
	// Timeout.
	Client redis.UniversalClient
	// Name names the budget: its keys are "respool:budget:{"+Name+"}" (the
	// leases) and that followed by ":members", ":wants", ":needy",
	// ":settling", and its
	// pub/sub channel that followed by ":want". Every process sharing a
	// database's connections gives the same Name and Max.
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

// Budget is a pool.Budget shared through Redis; see the package
// documentation. It is safe for concurrent use. Close it when its pools
// are closed.
type Budget struct {
	c       Config
	keys    []string // the leases, the members, those wanting a slot, those wanting one below their share
	channel string   // where a process starting to want a slot says so
	id      string   // this process's name among the members, and the prefix of its leases' names
	stop    chan struct{}
	kick    chan struct{} // a renewal now: another process wants a slot
	done    chan struct{}
	subDone chan struct{}
	sub     *redis.PubSub
	close   sync.Once

	ownClient bool // made from a URL (respool_budget): closed by Close

	mu     sync.Mutex
	next   uint64
	leases map[string]bool // the slots held: a lease's name, and whether Redis holds it
	down   bool            // Redis did not answer the last call
	silent bool            // Redis did not answer since it last did and no call found it whole since (see scriptHead)
	closed bool

	share, members int                     // as Redis last said
	pools          map[int]func(int, bool) // the pools attached (Attach), by attachment number
	rotate         int                     // the first pool asked for the remainder of an ask (reclaim.Spread)
	asked          int                     // what they were last asked for (reclaim)
	askedInUse     bool

	refused, storeErrors uint64 // see Stats
}

var _ pool.Reclaimer = (*Budget)(nil)

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
		resil.Check(cfg.Client == nil || honoursDeadlines(cfg.Client), mechanism, "Client", "a client without ContextTimeoutEnabled",
			"a client whose Options set ContextTimeoutEnabled: without it go-redis ignores the deadline of each call, and a Redis that does not answer would hold creations well past Timeout"),
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
	base := "respool:budget:{" + cfg.Name + "}" // one hash slot for every key: a Redis Cluster runs the scripts
	b := &Budget{c: cfg, keys: []string{base, base + ":members", base + ":wants", base + ":needy", base + ":settling"}, channel: base + ":want",
		id:   host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(r[:]),
		stop: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{}), subDone: make(chan struct{}),
		leases: map[string]bool{}, pools: map[int]func(int, bool){}}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout) // go-redis dials here: a Redis down must not hold New
	b.sub = cfg.Client.Subscribe(ctx, b.channel)
	cancel()
	go b.listen()
	go b.renewEvery(cfg.TTL / 3)
	b.kick <- struct{}{} // join at once: the others' shares count this process
	return b, nil
}

// The scripts run on Redis's clock (TIME), so that the processes' clocks
// need not agree. KEYS: the leases (lease name → expiry), the members
// (process → expiry), those wanting a slot and those wanting one below
// their share (process → expiry), and the settling mark; a lease's name is
// its process's name, "#" and a number. Each drops what expired first. A
// process's share is Max / members, rounded down.
//
// Settling: a process that found Redis silent since it last answered
// (ARGV[4] > 0) and now finds no member at all knows Redis lost the budget
// (it restarted empty): processes hold connections whose leases their next
// renewal registers again (within TTL/3; those that saw Redis silent retry
// every Timeout). For ARGV[4] ms (TTL/2) no new lease is given, so that
// no process takes a slot whose connection is still open elsewhere.
const scriptHead = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, 4 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
local max, ttl, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
if tonumber(ARGV[4]) > 0 and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[5], '1', 'PX', tonumber(ARGV[4]))
end
redis.call('ZADD', KEYS[2], now + ttl, member)
local members = redis.call('ZCARD', KEYS[2])
local share = math.floor(max / members)
local function others(key)
  return redis.call('ZCARD', key) - (redis.call('ZSCORE', key, member) and 1 or 0)
end
`

// acquireScript takes the lease ARGV[5] for ARGV[2] ms for the process
// ARGV[3] when fewer than Max (ARGV[1]) live leases exist, the budget is
// not settling, and the process is below its share or nobody else below
// theirs wants one. Otherwise the process wants a slot for ARGV[6] ms (and
// says so on the channel ARGV[7] when it starts to). A process that wanted one below its share keeps
// being owed until it has its share, not only until its next slot.
// Returns {taken (1 or 0), share, members}.
var acquireScript = redis.NewScript(scriptHead + `
local held, prefix = 0, member .. '#'
for _, v in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(v, 1, #prefix) == prefix then held = held + 1 end
end
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {0, share, members}
end
if redis.call('ZCARD', KEYS[1]) < max and (held < share or others(KEYS[4]) == 0) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[5])
  redis.call('ZREM', KEYS[3], member)
  if held + 1 >= share then redis.call('ZREM', KEYS[4], member) end
  return {1, share, members}
end
local wantUntil = now + tonumber(ARGV[6])
local new = redis.call('ZADD', KEYS[3], wantUntil, member)
if held < share then new = new + redis.call('ZADD', KEYS[4], wantUntil, member) end
if new > 0 then redis.call('PUBLISH', ARGV[7], member) end
return {0, share, members}
`)

// renewScript extends each lease of ARGV[5:] (those of the process ARGV[3])
// by ARGV[2] ms, taking again one that expired (or was never taken) when
// fewer than ARGV[1] live leases exist, and keeps the process a member.
// Returns {share, members, reclaim, inUse, then per lease 1 if Redis holds
// it}: reclaim is the slots held beyond the share when another process
// wants one (inUse 1 when one below its share does: its share is owed),
// counting the leases Redis could not take again (their connections are
// open all the same).
var renewScript = redis.NewScript(scriptHead + `
local out, held = {share, members, 0, 0}, 0
for i = 5, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) or redis.call('ZCARD', KEYS[1]) < max then
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
    out[#out + 1] = 1
    held = held + 1
  else
    out[#out + 1] = 0
  end
end
local mine = #ARGV - 4 -- registered or not: its connections exist
if mine > share then
  if others(KEYS[4]) > 0 then
    out[3], out[4] = mine - share, 1
  elseif others(KEYS[3]) > 0 then
    out[3] = mine - share
  end
end
return out
`)

// wantFor is how long a process refused a slot counts as wanting one: its
// pool asks again every 100ms while it does.
const wantFor = 500 * time.Millisecond

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
	name := b.id + "#" + strconv.FormatUint(b.next, 10)
	settle := b.settleLocked()
	b.mu.Unlock()

	call, cancel := context.WithTimeout(ctx, b.c.Timeout)
	res, err := acquireScript.Run(call, b.c.Client, b.keys, b.c.Max, b.c.TTL.Milliseconds(), b.id, settle, name,
		wantFor.Milliseconds(), b.channel).Int64Slice()
	cancel()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("acquire script answered %v", res)
	}
	if err != nil && ctx.Err() != nil { // the caller's end, not Redis's silence
		return nil, fmt.Errorf("redisbudget %s: %w", b.c.Name, ctx.Err())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		// The call may have reached Redis (and a slot given back meanwhile
		// may be another process's now): nothing is opened until Redis
		// answers; the connections open serve on.
		b.failed(err)
		b.refused++
		return nil, fmt.Errorf("redisbudget %s: Redis does not answer (%v): keeping the %d connections open, opening none: %w",
			b.c.Name, err, len(b.leases), pool.ErrBudgetExhausted)
	case res[0] == 0:
		b.share, b.members, b.silent = int(res[1]), int(res[2]), false
		b.answered()
		b.refused++
		return nil, fmt.Errorf("redisbudget %s: all %d slots taken (or owed to processes below their share of %d): %w",
			b.c.Name, b.c.Max, b.share, pool.ErrBudgetExhausted)
	default:
		b.share, b.members, b.silent = int(res[1]), int(res[2]), false
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
	err := b.c.Client.ZRem(ctx, b.keys[0], name).Err()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.failed(err) // the lease expires within TTL
		return
	}
	b.answered()
}

// failed notes a call to Redis that failed (b.mu held): the first of a run
// is logged; Acquire opens nothing meanwhile.
func (b *Budget) failed(err error) {
	b.storeErrors++
	if b.down {
		return
	}
	b.down, b.silent = true, true
	b.c.Logger.Warn("redisbudget: Redis does not answer: the connections open serve on, none is opened",
		slog.String("budget", b.c.Name), slog.Int("held", len(b.leases)), slog.String("error", err.Error()))
}

// answered notes a call to Redis that succeeded (b.mu held), after the
// leases it changed.
func (b *Budget) answered() {
	if !b.down {
		return
	}
	b.down = false
	b.c.Logger.Info("redisbudget: Redis answers again", slog.String("budget", b.c.Name), slog.Int("held", len(b.leases)))
}

// renewEvery renews the leases every d until Close.
//
// While Redis does not answer, it tries again every Timeout, so that once
// Redis is back its leases are registered again at once (see scriptHead).
func (b *Budget) renewEvery(d time.Duration) {
	defer close(b.done)
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.kick:
			t.Stop()
		}
		b.renew()
		b.mu.Lock()
		next := d
		if b.down {
			next = b.c.Timeout
		}
		b.mu.Unlock()
		t.Reset(next)
	}
}

// listen kicks a renewal each time another process starts to want a slot,
// so that it learns at once what to give back for it.
func (b *Budget) listen() {
	defer close(b.subDone)
	for m := range b.sub.Channel() {
		if m.Payload == b.id {
			continue
		}
		select {
		case b.kick <- struct{}{}:
		default: // one is due already
		}
	}
}

// renew keeps this process a member, extends every lease held, registers
// those Redis does not hold, and asks the pools for the slots owed to
// others.
func (b *Budget) renew() {
	const head = 4
	b.mu.Lock()
	names := make([]any, 0, len(b.leases)+head)
	names = append(names, b.c.Max, b.c.TTL.Milliseconds(), b.id, b.settleLocked())
	for name := range b.leases {
		names = append(names, name)
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
	res, err := renewScript.Run(ctx, b.c.Client, b.keys, names...).Int64Slice()
	cancel()
	if err == nil && len(res) != 4+len(names)-head {
		err = fmt.Errorf("renew script answered %v", res)
	}
	b.mu.Lock()
	if err != nil {
		b.failed(err)
		ask := b.reclaim(0, false) // nothing is owed that Redis does not say
		b.mu.Unlock()
		ask()
		return
	}
	b.share, b.members, b.silent = int(res[0]), int(res[1]), false
	held := res[4:]
	b.answered()
	var orphans []any // given back while the renewal ran: it may have taken them again
	gone := 0
	for i, h := range held {
		name := names[i+head].(string)
		if _, ok := b.leases[name]; ok {
			b.leases[name] = h == 1
			continue
		}
		gone++
		if h == 1 {
			orphans = append(orphans, name)
		}
	}
	// Slots given back while the script ran were counted in what it says
	// is owed: they are given already.
	ask := b.reclaim(max(int(res[2])-gone, 0), res[3] == 1)
	b.mu.Unlock()
	// b.mu unlocked: Acquire and Stats wait neither for the pools' actors
	// nor for Redis.
	ask()
	if len(orphans) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
		_ = b.c.Client.ZRem(ctx, b.keys[0], orphans...).Err() // else they expire within TTL
		cancel()
	}
}

// Stats returns a snapshot of the Budget (a respool pool's Stats.Budget
// holds it too).
func (b *Budget) Stats() pool.BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := pool.BudgetStats{Held: len(b.leases), Share: b.share, Members: b.members, Borrowed: max(len(b.leases)-b.share, 0),
		Reclaiming: b.asked, StoreDown: b.down, Refused: b.refused, StoreErrors: b.storeErrors}
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
		_ = b.sub.Close()
		<-b.subDone
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
		ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout)
		defer cancel()
		pipe := b.c.Client.TxPipeline()
		if len(names) > 0 {
			pipe.ZRem(ctx, b.keys[0], names...)
		}
		for _, k := range b.keys[1:4] { // no longer a member: the others' shares grow at once
			pipe.ZRem(ctx, k, b.id)
		}
		_, err = pipe.Exec(ctx)
		if b.ownClient {
			err = errors.Join(err, b.c.Client.Close())
		}
	})
	return err
}

// Attach attaches a pool (pool.Reclaimer): it is asked for the slots this
// process holds beyond its share while another process wants one.
func (b *Budget) Attach(reclaim func(n int, inUse bool)) (detach func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := int(b.next)
	b.pools[id] = reclaim
	return func() {
		b.mu.Lock()
		delete(b.pools, id)
		b.mu.Unlock()
	}
}

// reclaim returns the func that asks the pools attached for n slots back,
// spread over them (b.mu held; call it with b.mu unlocked). Once they were
// asked for none, they are not asked for none again.
func (b *Budget) reclaim(n int, inUse bool) (ask func()) {
	if n == 0 && b.asked == 0 && !b.askedInUse {
		return func() {}
	}
	b.asked, b.askedInUse = n, inUse
	ids := slices.Sorted(maps.Keys(b.pools)) // in attachment order: the remainder rotates over them
	b.rotate++
	var asks []func()
	for i, part := range reclaim.Spread(n, len(ids), b.rotate) {
		f := b.pools[ids[i]]
		asks = append(asks, func() { f(part, inUse) })
	}
	return func() {
		for _, a := range asks {
			a()
		}
	}
}

// settleLocked is ARGV[4] of the scripts (b.mu held): TTL/2 in ms when this
// process found Redis silent since it last answered, else 0 (see
// scriptHead).
func (b *Budget) settleLocked() int64 {
	if !b.silent {
		return 0
	}
	return (b.c.TTL / 2).Milliseconds()
}
