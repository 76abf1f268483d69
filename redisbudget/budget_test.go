package redisbudget_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/respool/respool/redisbudget"
	"github.com/respool/respool/resilience"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A bad Config is refused by New, each bad field named with what is
// accepted, and nothing is started. (Its behaviour on a real Redis is
// tested in integration/budget.)
func TestNewRefusesABadConfig(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer rdb.Close()
	deaf := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // calls would not end at Timeout
	defer deaf.Close()
	for _, c := range []struct {
		cfg   redisbudget.Config
		field string
	}{
		{redisbudget.Config{Name: "n", Max: 1}, "Client"},
		{redisbudget.Config{Client: deaf, Name: "n", Max: 1}, "Client"},
		{redisbudget.Config{Client: rdb, Max: 1}, "Name"},
		{redisbudget.Config{Client: rdb, Name: "n"}, "Max"},
		{redisbudget.Config{Client: rdb, Name: "n", Max: 1, TTL: time.Millisecond}, "TTL"},
		{redisbudget.Config{Client: rdb, Name: "n", Max: 1, Timeout: -time.Second}, "Timeout"},
		{redisbudget.Config{Client: rdb, Name: "n", Max: 1, TTL: 90 * time.Millisecond}, "Timeout"}, // 100ms > TTL/3
	} {
		b, err := redisbudget.New(c.cfg)
		var ce *resilience.ConfigError
		if b != nil || !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New(%+v) = %v, %v; want a ConfigError naming %s", c.cfg, b, err, c.field)
		}
	}
}
