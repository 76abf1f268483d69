package respool

import (
	"cmp"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// Group is one connection budget shared by several databases: a primary and
// its replicas, a reporting database, one database per tenant. Each member
// is a Connector of its own (its DSN or Config, its hooks, its Stats, its
// *sql.DB), and the connections of every member together never exceed the
// Group's MaxConns, which no member can hold for long while another waits:
//
//	g, err := respool.NewGroup(respool.GroupConfig{MaxConns: 20})
//	rw, err := g.Connector("primary", cfgRW)
//	ro, err := g.Connector("replica", cfgRO)
//	primary, replica := sql.OpenDB(rw), sql.OpenDB(ro)
//
// It is a pool.Keyed with one key per member (see pool.Keyed for the
// rules): a member that needs a connection while the budget is spent waits
// with the other members' callers (the member holding fewest connections
// is served first, members holding as many in FIFO order), and gets an idle
// connection's slot of another member (the least recently used, never
// below that member's MinIdle) or the next one given back to a member
// nobody of which waits, or that holds more than one connection more. A member's Config.Pool.MaxObjects (respool_max_conns)
// caps that member within the budget; its MaxQueueSize, ValidationInterval
// and Clock are the Group's and must be left zero.
type Group struct {
	k      *pool.Keyed[string, driver.Conn]
	name   string       // GroupConfig.Name, or its default
	logger *slog.Logger // GroupConfig.Logger, or slog.Default() when NewGroup ran

	mu      sync.Mutex
	members map[string]*Connector // the last made for each key; guarded by mu
}

// GroupConfig configures a Group: what its members share. Every zero value
// means the documented default.
type GroupConfig struct {
	// MaxConns is the most connections of every member together, counting
	// those being opened and closed. Zero means the pool's default, max(4,
	// runtime.NumCPU()).
	MaxConns int
	// MaxQueue is how many callers may wait for a connection, across every
	// member; the next one fails with pool.ErrQueueFull. Zero means the
	// pool's default, 1024.
	MaxQueue int
	// ValidationInterval is the pool's tick of every member (see
	// pool.Config). Zero means the pool's default, 30s.
	ValidationInterval time.Duration
	// Name names the Group; a member's pool is named Name[key] unless its
	// Config.Pool.Name is set. Empty means "respool-group".
	Name string
	// Logger logs for members whose Config.Pool.Logger is nil. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// NewGroup starts a Group with no members (see Group.Connector). It returns
// an error matching ErrInvalidConfig, and a *resilience.ConfigError naming the
// field (MaxConns as MaxObjects, MaxQueue as MaxQueueSize), if cfg is not
// valid.
func NewGroup(cfg GroupConfig) (*Group, error) {
	if cfg.Name == "" {
		cfg.Name = "respool-group"
	}
	k, err := pool.NewKeyed(pool.KeyedConfig[string, driver.Conn]{
		MaxObjects: cfg.MaxConns, MaxQueueSize: cfg.MaxQueue, ValidationInterval: cfg.ValidationInterval,
		Name: cfg.Name, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: group: %w", ErrInvalidConfig, err)
	}
	return &Group{k: k, name: cfg.Name, logger: cmp.Or(cfg.Logger, slog.Default()), members: make(map[string]*Connector)}, nil
}

// Connector adds the member key, whose connections cfg configures as it
// does NewConnector's, and returns its Connector, for sql.OpenDB. The
// Connector's Close (sql.DB.Close) closes that member alone, whose key can
// then be added again. It fails with an error matching ErrInvalidConfig
// for a cfg NewConnector refuses or one that asks for more than the Group
// gives (Pool.MaxObjects over MaxConns, the members' Pool.MinIdle together
// over MaxConns, a Pool.MaxQueueSize or Pool.ValidationInterval of its
// own), with pool.ErrKeyExists for a key open already, and with
// pool.ErrClosed once the Group is closing.
func (g *Group) Connector(key string, cfg Config) (*Connector, error) {
	if cfg.SharedBudget != "" || cfg.Pool.Budget != nil {
		return nil, fmt.Errorf("%w: group %s: member %q: SharedBudget (respool_budget) and Pool.Budget are not for a Group's members, which share the Group's budget", ErrInvalidConfig, g.name, key)
	}
	if cfg.Pool.Name == "" {
		cfg.Pool.Name = fmt.Sprintf("%s[%s]", g.name, key)
	}
	if cfg.Pool.Logger == nil { // the Group's, for the member's guard and hooks too
		cfg.Pool.Logger = g.logger
	}
	g.mu.Lock() // a Close waits: no member is added once it has begun
	defer g.mu.Unlock()
	c, err := newConnector(cfg, nil, func(f pool.Factory[driver.Conn], pc pool.Config) (*pool.Pool[driver.Conn], error) {
		p, err := g.k.Add(key, f, pc)
		var ce *resilience.ConfigError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%w: group %s: member %q: %w", ErrInvalidConfig, g.name, key, err)
		}
		return p, err
	})
	if err != nil {
		return nil, err
	}
	g.members[key] = c // replaces one closed before
	return c, nil
}

// Stats returns the Group's statistics: every member's summed, Total being
// the connections of the budget in use, and each member's under its key.
func (g *Group) Stats() pool.KeyedStats[string] { return g.k.Stats() }

// Format prints g, for every verb of package fmt, as its type and its
// name in quotes: not its fields, which change while it is in use.
func (g *Group) Format(f fmt.State, _ rune) { _, _ = fmt.Fprintf(f, "%T(%q)", g, g.name) }

// Close closes every member: their pause timers stop, new takes fail with
// pool.ErrClosed, idle connections are closed and those in use as they come
// back. It waits until every connection is closed, and returns nil then, or
// ctx's error, wrapped with how many remain, if ctx ends first. The
// members' *sql.DBs are the caller's to close.
func (g *Group) Close(ctx context.Context) error {
	g.mu.Lock()
	members := slices.Collect(maps.Values(g.members))
	clear(g.members)
	g.k.StartClose()
	for _, c := range members {
		c.retire()
	}
	g.mu.Unlock()
	return g.k.Close(ctx)
}
