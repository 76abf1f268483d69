package redisbudget

import (
	"cmp"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// ShareConfig configures Share and RateStore. Client and Name are
// required; the zero values of the others are their documented defaults.
type ShareConfig struct {
	// Client reaches the Redis every process sharing the database reaches.
	// It must bound its calls by their context's deadline:
	// redis.Options.ContextTimeoutEnabled (Timeout relies on it).
	Client redis.UniversalClient
	// Name names what the processes share (a database): the rate is kept
	// under the keys "{respool:rate:"+Name+":"+key+"}" (and "…:procs"),
	// the signals sent on the channel "respool:signal:"+Name and kept,
	// while they hold, under that name+":pause" and ":open". Every process
	// sharing the database gives the same Name.
	Name string
	// Timeout bounds each call to Redis: a connection attempt waits at most
	// this for the shared rate before it falls back to its local share.
	// Zero: 100ms.
	Timeout time.Duration
	// Logger gets one line when Redis stops answering and one when it
	// answers again. Nil: slog.Default().
	Logger *slog.Logger
}

// withDefaults checks c and returns it with its defaults filled in.
func (c ShareConfig) withDefaults() (ShareConfig, error) {
	const mechanism = "redisbudget"
	if err := resil.FirstError(
		resil.Check(c.Client != nil, mechanism, "Client", "<nil>", "a redis.UniversalClient"),
		resil.Check(honoursDeadlines(c.Client), mechanism, "Client", "a client without ContextTimeoutEnabled",
			"a client with redis.Options.ContextTimeoutEnabled: without it a call ignores Timeout and waits for Redis up to ReadTimeout (3s)"),
		resil.Check(c.Name != "", mechanism, "Name", `""`, "a name every process sharing the database gives"),
		resil.Check(c.Timeout >= 0, mechanism, "Timeout", c.Timeout, "a positive duration, or 0 for 100ms"),
	); err != nil {
		return c, err
	}
	c.Timeout = cmp.Or(c.Timeout, 100*time.Millisecond)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Share makes the Guards built from c (a respool Config's Resilience, or a
// dbguard.Config) share, with every process that calls Share with the same
// Name, through Redis:
//
//   - the connection rate: c.ConnectRate becomes the rate of all of them
//     together (c.ConnectRateStore is set to RateStore(cfg));
//   - what stops a process dialing: when one process's circuit opens
//     (a dead server, or its statements failing) or its creations pause
//     (back-pressure: "too many connections"), the others pause their
//     creations as long (c.Join is set: each Guard subscribes to the
//     Name's channel while it lives, until Close).
//
// For a respool Connector:
//
//	cfg, err := respool.ParseDSN(dsn) // respool_connect_rate=50: 50 a second in all
//	err = redisbudget.Share(&cfg.Resilience, redisbudget.ShareConfig{Client: rdb, Name: "orders-db"})
//	c, err := respool.NewConnector(*cfg)
//
// A process paused by another holds its new connections behind its pause,
// as its own back-pressure would, and keeps serving with the connections
// it has; when the pause ends, its next creation probes the server (a
// Guard whose pause is off, respool_pause=off, sends its signals and
// applies none). The signal names the pause's length, not its end (the
// processes' clocks need not agree); it is kept in Redis while it holds,
// so that a Guard subscribing meanwhile (a process starting, or any
// process once Redis is back) is paused too, and one Redis did not take
// is sent again while it holds. A pause received is not sent on, so
// that a signal goes round once; a circuit opened for the credentials a
// process was refused is not sent (the others' may be right). Events go
// to Redis from a goroutine of the Guard's, at most one call at a time,
// never from the caller that met them. Share refuses a c already joined
// (c.Join set).
func Share(c *dbguard.Config, cfg ShareConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if c.Join != nil {
		return errors.New("redisbudget: Share: the dbguard.Config has a Join already (Share was called on it before?)")
	}
	c.ConnectRateStore = newRateStore(cfg)
	c.Join = func(g *dbguard.Guard) (resilience.Listener, func()) { return join(g, cfg) }
	return nil
}

// health notes whether Redis answers, for a log line when that changes.
type health struct {
	name   string // the ShareConfig's Name
	what   string // what falls back while Redis is down
	logger *slog.Logger

	mu   sync.Mutex // guards down
	down bool
}

// failed notes a call that failed; the first of a run is logged. It
// reports whether Redis was up before.
func (h *health) failed(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return false
	}
	h.down = true
	h.logger.Warn("redisbudget: Redis does not answer: "+h.what, slog.String("name", h.name), slog.String("error", err.Error()))
	return true
}

// answered notes a call that succeeded; the first after a failure is
// logged. It reports whether Redis was down before.
func (h *health) answered() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return false
	}
	h.down = false
	h.logger.Info("redisbudget: Redis answers again", slog.String("name", h.name))
	return true
}

// honoursDeadlines reports whether c bounds its calls by their context's
// deadline (ContextTimeoutEnabled); true for a client whose options it
// cannot read.
func honoursDeadlines(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}
