package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
)

// ErrUnknownKey is matched (errors.Is) by the error of a Keyed's Take of a
// key it does not have when KeyedConfig.NewKey is nil.
var ErrUnknownKey = errors.New("pool: unknown key")

// keyTable finds a key's pool. It is never changed: a new one replaces it.
// A few keys are looked for in a list, which costs less than hashing the
// key (for strings, a third of a map's lookup).
type keyTable[K comparable, T any] struct {
	m    map[K]*Pool[T]
	list []keyPool[K, T] // m's entries, when there are at most listedKeys
}

type keyPool[K comparable, T any] struct {
	key K
	p   *Pool[T]
}

// listedKeys is the most keys looked for in a list.
const listedKeys = 8

func newKeyTable[K comparable, T any](m map[K]*Pool[T]) *keyTable[K, T] {
	t := &keyTable[K, T]{m: m}
	if len(m) <= listedKeys {
		for key, p := range m {
			t.list = append(t.list, keyPool[K, T]{key, p})
		}
	}
	return t
}

// get returns key's pool, or nil.
func (t *keyTable[K, T]) get(key K) *Pool[T] {
	if t.list == nil {
		return t.m[key]
	}
	for i := range t.list {
		if t.list[i].key == key {
			return t.list[i].p
		}
	}
	return nil
}

// ErrKeyExists is matched (errors.Is) by the error of Keyed.Add for a key
// the Keyed has already.
var ErrKeyExists = errors.New("pool: key exists")

// Keyed is a set of pools, one per key, under one budget: a primary and its
// replicas, one pool per tenant or per remote service, with a bound on the
// objects of all of them together (a server's max_connections) that no key
// can exhaust on its own for long.
//
// Each key is a *Pool with its own factory and Config: its MaxObjects caps
// the key, MinIdle, lifetimes, creation back-off, back-pressure, hooks and
// the overload policy are its own, and its fast paths are a Pool's (taking
// and giving back an idle object asks nobody). What needs every key is
// decided in one place, an actor that runs every key's: the Keyed's
// MaxObjects bounds the objects of all keys (KeyedConfig), one MaxQueueSize
// bounds the callers waiting in all keys, one tick and one leak tracker
// serve them all.
//
// When a key could create an object but the budget is spent, its caller
// waits with the callers of every other key in that state: each slot of the
// budget goes first to the key that holds fewest objects, and among keys
// that hold as many to the caller that has waited longest. The budget is
// found for them:
//
//   - an idle object of another key that nobody of that key waits for is
//     destroyed, the least recently used first (to the resolution of the
//     pool's coarse clock, ValidationInterval), never taking a key below its
//     MinIdle (Stats.Destroys.Evicted);
//   - an object given back to another key is destroyed, so that the waiting
//     key can create one, when nobody of its key waits for it, or when its
//     key holds more than one object more than the waiting key: a key under
//     constant load lends the budget to one that waits until both hold about
//     as many (Stats.Destroys.Yielded).
//
// Take(ctx, key) takes from a key's pool; the Handle's GiveBack and Discard
// return it to that key. Add returns the key's *Pool itself, whose Take,
// TryTake and Stats are a Pool's within the budget and whose Close closes
// that key alone (it can then be added again); a key that NewKey made
// closes with the Keyed. Stats sums every key and lists each under
// KeyedStats.Keys. A key's Reset and Resize are a Pool's (its MinIdle no
// higher than its Config's); the budget itself, KeyedConfig.MaxObjects,
// does not change while the Keyed runs.
type Keyed[K comparable, T any] struct {
	cfg    KeyedConfig[K, T] // with defaults; immutable
	b      *budget[T]
	leakOn atomic.Bool // a key tracks leaks: the loop watches leases after each collection

	keys atomic.Pointer[keyTable[K, T]] // replaced, never changed, under mu

	mu     sync.Mutex // held by Add, StartClose and forget, and by Stats to read closed; not by the loop
	closed bool

	statsMu sync.Mutex
	pools   map[*Pool[T]]K // keys alive or closing
	retired Stats          // the counters of the keys gone, summed
}

// KeyedConfig configures a Keyed: what its keys share. Every zero value
// means the default its field states.
type KeyedConfig[K comparable, T any] struct {
	// MaxObjects is the most objects alive at once across every key,
	// counting those being created, tested and destroyed, at most 65536.
	// Zero means max(4, runtime.NumCPU()).
	MaxObjects int
	// MaxQueueSize is how many callers may wait, across every key: for a
	// give-back of their key, or for the budget; the next one fails with an
	// error matching ErrQueueFull. Zero means 1024.
	MaxQueueSize int
	// ValidationInterval is the tick of every key (see Config). Zero means
	// 30s; a key's MaxIdle must not be shorter.
	ValidationInterval time.Duration
	// LeakTrackingDisabled, LeakCaptureStack and HoldThreshold are the leak
	// tracking (see Config) of the keys whose Config leaves all three zero.
	LeakTrackingDisabled bool
	LeakCaptureStack     bool
	HoldThreshold        time.Duration
	// Clock is the source of time of every key. Nil means clock.System().
	Clock clock.Clock
	// Logger is the logger of the keys whose Config.Logger is nil. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Name names the Keyed; a key's pool is named Name[key] unless its
	// Config names it. Empty means "keyed".
	Name string
	// NewKey, when set, makes the factory and Config of a key the first time
	// Take asks for a key not added (one factory that takes the key). Nil
	// means keys come from Add only, and Take of another key fails with
	// ErrUnknownKey.
	NewKey func(key K) (Factory[T], Config, error)
}

// validate reports the first field whose value is not accepted, as a
// *resilience.ConfigError naming it.
func (c KeyedConfig[K, T]) validate() error {
	return resil.FirstError(
		nonNeg("MaxObjects", c.MaxObjects),
		nonNeg("MaxQueueSize", c.MaxQueueSize),
		nonNeg("ValidationInterval", c.ValidationInterval),
		nonNeg("HoldThreshold", c.HoldThreshold),
		checkMaxObjects(c.MaxObjects),
	)
}

func (c KeyedConfig[K, T]) withDefaults() KeyedConfig[K, T] {
	if c.MaxObjects == 0 {
		c.MaxObjects = defaultMaxObjects()
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = defaultMaxQueueSize
	}
	if c.ValidationInterval == 0 {
		c.ValidationInterval = defaultValidationInterval
	}
	if c.Clock == nil {
		c.Clock = clock.System()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Name == "" {
		c.Name = "keyed"
	}
	return c
}

// NewKeyed starts a Keyed with no keys (see Add and KeyedConfig.NewKey). It
// returns a *resilience.ConfigError naming the field if cfg is not valid.
func NewKeyed[K comparable, T any](cfg KeyedConfig[K, T]) (*Keyed[K, T], error) {
	return newKeyed(cfg, nil)
}

// newKeyed is NewKeyed with a hook that the loop calls after each event
// (tests).
func newKeyed[K comparable, T any](cfg KeyedConfig[K, T], hook func(string)) (*Keyed[K, T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	k := &Keyed[K, T]{cfg: cfg, pools: make(map[*Pool[T]]K)}
	k.b = newBudget(cfg, hook)
	k.b.forget, k.b.retire = k.forget, k.retire
	k.keys.Store(newKeyTable(map[K]*Pool[T]{}))
	go k.b.run()
	return k, nil
}

// Add adds key, whose objects f makes, configured by cfg, and returns its
// pool. cfg is a Pool's Config, but for what the keys share: MaxObjects
// caps the key (zero means the Keyed's MaxObjects, the most it may be);
// MaxQueueSize, ValidationInterval and Clock must be zero (or the
// Keyed's); leak fields all zero or a nil Logger mean the Keyed's; an empty
// Name means the Keyed's Name[key]. The MinIdle of every key together must
// not exceed the Keyed's MaxObjects. It fails with ErrKeyExists if key is
// there already, with ErrClosed once the Keyed is closing, and with a
// *resilience.ConfigError naming the field otherwise.
func (k *Keyed[K, T]) Add(key K, f Factory[T], cfg Config) (*Pool[T], error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	if k.keys.Load().get(key) != nil {
		return nil, fmt.Errorf("pool: %s: key %v: %w", k.cfg.Name, key, ErrKeyExists)
	}
	cfg, err := k.keyConfig(key, cfg)
	if err != nil {
		return nil, err
	}
	p, err := buildPool(f, cfg, k.b)
	if err != nil {
		return nil, err
	}
	k.b.adds.Add(1)
	p.send(message[T]{kind: msgAddKey}) // before p is reachable: its messages come after
	if !p.cfg.LeakTrackingDisabled && k.leakOn.CompareAndSwap(false, true) {
		k.notifyGC()
	}
	m := maps.Clone(k.keys.Load().m)
	m[key] = p
	k.keys.Store(newKeyTable(m))
	k.statsMu.Lock()
	k.pools[p] = key
	k.statsMu.Unlock()
	return p, nil
}

// keyConfig fills cfg, key's Config, with what the Keyed gives every key and
// checks what they share; k.mu is held.
func (k *Keyed[K, T]) keyConfig(key K, cfg Config) (Config, error) {
	kc := k.cfg
	shared := func(ok bool, field string, v, keyed any) error {
		return resil.Check(ok, mechanism, field, v, fmt.Sprintf("0 or the Keyed's (%v): every key has the Keyed's", keyed))
	}
	if err := resil.FirstError(
		resil.Check(cfg.MaxObjects <= kc.MaxObjects, mechanism, "MaxObjects", cfg.MaxObjects,
			"at most the Keyed's MaxObjects ("+strconv.Itoa(kc.MaxObjects)+")"),
		shared(cfg.MaxQueueSize == 0 || cfg.MaxQueueSize == kc.MaxQueueSize, "MaxQueueSize", cfg.MaxQueueSize, kc.MaxQueueSize),
		shared(cfg.ValidationInterval == 0 || cfg.ValidationInterval == kc.ValidationInterval,
			"ValidationInterval", cfg.ValidationInterval, kc.ValidationInterval),
		shared(cfg.Clock == nil || sameClock(cfg.Clock, kc.Clock), "Clock", cfg.Clock, kc.Clock),
		resil.Check(cfg.Budget == nil, mechanism, "Budget", fmt.Sprintf("%T", cfg.Budget),
			"nil: a key shares the Keyed's budget; a budget shared with other processes is for a Pool"),
	); err != nil {
		return cfg, err
	}
	if cfg.MaxObjects == 0 {
		cfg.MaxObjects = kc.MaxObjects
	}
	minIdle := cfg.MinIdle
	for _, p := range k.keys.Load().m {
		minIdle += p.cfg.MinIdle
	}
	if minIdle > kc.MaxObjects {
		return cfg, resil.Check(false, mechanism, "MinIdle", cfg.MinIdle,
			fmt.Sprintf("a value that keeps the keys' MinIdle together (%d) at most the Keyed's MaxObjects (%d)", minIdle, kc.MaxObjects))
	}
	cfg.MaxQueueSize, cfg.ValidationInterval, cfg.Clock = kc.MaxQueueSize, kc.ValidationInterval, kc.Clock
	if !cfg.LeakTrackingDisabled && !cfg.LeakCaptureStack && cfg.HoldThreshold == 0 {
		cfg.LeakTrackingDisabled, cfg.LeakCaptureStack, cfg.HoldThreshold = kc.LeakTrackingDisabled, kc.LeakCaptureStack, kc.HoldThreshold
	}
	if cfg.Logger == nil {
		cfg.Logger = kc.Logger
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("%s[%v]", kc.Name, key)
	}
	return cfg, nil
}

// sameClock reports whether a and b are the same Clock, without panicking
// on a Clock whose type cannot be compared.
func sameClock(a, b clock.Clock) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// notifyGC has the loop watch every key's leases out after each garbage
// collection, until the Keyed is done.
func (k *Keyed[K, T]) notifyGC() { sendOnGC(k.b.mailbox, k.b.done) }

// member returns key's pool, or nil if the Keyed has no such key (it may
// come with NewKey on a Take).
func (k *Keyed[K, T]) member(key K) *Pool[T] { return k.keys.Load().get(key) }

// Take takes an object of key, as Pool.Take does, within the budget (see
// Keyed). A key not added is made by KeyedConfig.NewKey, or fails with
// ErrUnknownKey.
func (k *Keyed[K, T]) Take(ctx context.Context, key K) (Handle[T], error) {
	if p := k.keys.Load().get(key); p != nil {
		return p.Take(ctx)
	}
	p, err := k.newKey(key)
	if err != nil {
		return Handle[T]{}, err
	}
	return p.Take(ctx)
}

// TryTake takes an idle object of key at once, as Pool.TryTake does. When
// none is idle and only the budget keeps the key from creating one, an idle
// object of another key that nobody of it waits for is destroyed (the least
// recently used, as for a waiting caller) and one created for key, so that
// a later TryTake finds it; callers waiting for the budget come first.
func (k *Keyed[K, T]) TryTake(key K) (Handle[T], error) {
	if p := k.keys.Load().get(key); p != nil {
		return p.TryTake()
	}
	p, err := k.newKey(key)
	if err != nil {
		return Handle[T]{}, err
	}
	return p.TryTake()
}

// newKey adds key with NewKey, unless another caller just did.
func (k *Keyed[K, T]) newKey(key K) (*Pool[T], error) {
	if k.cfg.NewKey == nil {
		return nil, fmt.Errorf("pool: %s: key %v: %w", k.cfg.Name, key, ErrUnknownKey)
	}
	f, cfg, err := k.cfg.NewKey(key)
	if err != nil {
		return nil, fmt.Errorf("pool: %s: NewKey(%v): %w", k.cfg.Name, key, err)
	}
	p, err := k.Add(key, f, cfg)
	if errors.Is(err, ErrKeyExists) {
		if p := k.member(key); p != nil {
			return p, nil
		}
	}
	return p, err
}

// forget drops p, which is closing, from the keys, so that its key can be
// added again; the budget calls it from p's StartClose.
func (k *Keyed[K, T]) forget(p *Pool[T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := maps.Clone(k.keys.Load().m)
	maps.DeleteFunc(m, func(_ K, q *Pool[T]) bool { return q == p })
	if len(m) != len(k.keys.Load().m) {
		k.keys.Store(newKeyTable(m))
	}
}

// retire moves p, which has finished closing, from the keys in Stats to the
// sum of those gone (their counters: see KeyedStats); the loop calls it.
func (k *Keyed[K, T]) retire(p *Pool[T]) {
	s := p.Stats()
	k.statsMu.Lock()
	defer k.statsMu.Unlock()
	delete(k.pools, p)
	k.retired.addCounts(s)
}

// StartClose begins closing every key, as Pool.StartClose does, and returns
// at once; Add fails with ErrClosed from now on.
func (k *Keyed[K, T]) StartClose() {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	k.closed = true
	pools := k.keys.Load().m
	k.mu.Unlock()
	for _, p := range pools {
		p.StartClose()
	}
	close(k.b.closing)
}

// Close closes every key (see StartClose) and waits until every object is
// gone. It returns nil then, or ctx's error, wrapped with how many objects
// remain, if ctx ends first; calling it again waits again. With leak
// tracking on, it runs garbage collections while objects are out, as
// Pool.Close does.
func (k *Keyed[K, T]) Close(ctx context.Context) error {
	k.StartClose()
	inUse := func() int { return k.Stats().InUse }
	if err := awaitClosed(ctx, k.leakOn.Load(), k.b.closeStarted, k.b.done, inUse); err != nil {
		s := k.Stats()
		return fmt.Errorf("pool: %s: close: %s still alive (%d in use): %w", k.cfg.Name, count(s.Total, "object"), s.InUse, err)
	}
	return nil
}
