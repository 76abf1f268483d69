package redisbudget_test

import (
	"database/sql"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool"
	"github.com/respool/respool/redisbudget"
)

// Every process of a service shares one rate of connection attempts, 50 a
// second in all, and stops dialing when one of them finds the server dead
// or full.
func ExampleShare() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	cfg, err := respool.ParseDSN("postgres://app@db.internal/orders?respool_connect_rate=50")
	if err != nil {
		log.Fatal(err)
	}
	if err := redisbudget.Share(&cfg.Resilience, redisbudget.ShareConfig{Client: rdb, Name: "orders-db"}); err != nil {
		log.Fatal(err)
	}
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
}
