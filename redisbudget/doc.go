// Package redisbudget shares a connection budget among processes through
// Redis: a pool.Budget (pool.Config.Budget, respool.Config's Pool.Budget)
// whose slots are leases in one Redis sorted set, so that the connections
// of every process sharing its Name never number more than Max together.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	b, err := redisbudget.New(redisbudget.Config{Client: rdb, Name: "orders-db", Max: 200})
//	defer b.Close()
//	cfg, err := respool.ParseDSN(dsn)
//	cfg.Pool.Budget = b
//	c, err := respool.NewConnector(*cfg)
//
// A process takes a slot before it opens a connection and gives it back
// when the connection is closed; a take of an idle connection does not ask
// Redis. Each lease lives TTL unless renewed (every TTL/3, one round trip
// for all of a process's leases), so that the slots of a process that dies
// come back within TTL.
//
// Redis may fail; queries may not: an Acquire waits at most Timeout for
// Redis. While Redis does not answer, the process keeps within the slots
// it held when it last heard from Redis (so that the sum stays within Max):
// a connection closed meanwhile can be opened again, no more; it logs once,
// and registers its leases again when Redis answers (Stats.Unregistered
// counts those it could not register because others took the slots).
//
// Limits, for now: each slot is taken first come, first served (no fair
// share between processes yet), and a process's idle connections keep
// their slots until its pool closes them (Pool.MaxIdle); a process that
// held no slot when Redis stopped answering opens none until it answers
// again; and a process cut off from Redis (while the others reach it) for
// longer than TTL keeps opening up to the slots it held while its leases
// expire and others take them, so the sum may exceed Max for that long.
// The scripts need Redis 5 or later (TIME before a write).
package redisbudget
