package redisbudget

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool"
	"github.com/respool/respool/pool"
)

// Importing the package lets respool_budget (respool.Config.SharedBudget)
// name a budget in Redis:
//
//	respool_budget=redis://[:password@]host:port[/db]?name=orders-db&max=200[&ttl=3s&timeout=100ms]
//
// and rediss:// for TLS. name and max are required (Config.Name and Max),
// ttl and timeout optional (Config.TTL and Timeout); every other query
// parameter is go-redis's (redis.ParseURL). The Connector owns the Redis
// client it makes: it is closed with the Budget.
func init() {
	respool.RegisterBudget("redis", openURL)
	respool.RegisterBudget("rediss", openURL)
}

// openURL opens the Budget spec names (see init).
func openURL(spec, _ string) (pool.Budget, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("redisbudget: not a URL: %w", err)
	}
	q := u.Query()
	cfg := Config{Name: q.Get("name")}
	for _, p := range []struct {
		key      string
		set      func(string) error
		accepted string
	}{
		{"max", func(v string) (err error) { cfg.Max, err = strconv.Atoi(v); return }, "an integer ≥ 1"},
		{"ttl", func(v string) (err error) { cfg.TTL, err = time.ParseDuration(v); return }, "a duration such as 3s"},
		{"timeout", func(v string) (err error) { cfg.Timeout, err = time.ParseDuration(v); return }, "a duration such as 100ms"},
	} {
		if v := q.Get(p.key); v != "" {
			if p.set(v) != nil {
				return nil, fmt.Errorf("redisbudget: %s=%q: want %s", p.key, v, p.accepted)
			}
		}
		q.Del(p.key)
	}
	if cfg.Name == "" || cfg.Max == 0 {
		return nil, fmt.Errorf("redisbudget: %s: name and max are required, as in ?name=orders-db&max=200", u.Redacted())
	}
	q.Del("name")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redisbudget: %w", err)
	}
	opts.ContextTimeoutEnabled = true // each call bounded by Timeout
	cfg.Client = redis.NewClient(opts)
	b, err := New(cfg)
	if err != nil {
		_ = cfg.Client.Close()
		return nil, err
	}
	b.ownClient = true
	return b, nil
}
