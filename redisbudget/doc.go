// Package redisbudget shares a connection budget among processes through
// Redis: a pool.Budget (pool.Config.Budget, respool.Config's Pool.Budget)
// whose slots are leases in one Redis sorted set, so that the connections
// of every process sharing its Name never number more than Max together.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
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
// it holds (so that the sum stays within Max): its connections serve on,
// and none is opened, not even in place of one closed meanwhile (the call
// that gave its slot back, or an Acquire that ran out of time, may have
// reached Redis, and the slot be another process's now); it logs once,
// tries again every Timeout, and registers its leases again when Redis
// answers (pool.BudgetStats.Unregistered counts those it could not
// register because others took the slots). When Redis comes back empty (a
// restart without persistence), no slot is given for TTL/2, by which every
// process has registered its leases again.
//
// Fair shares: every process with a Budget of the same Name is a member
// (kept alive by its renewals, gone within TTL of its death or at Close),
// and is guaranteed its share, Max / members rounded down. A process may
// borrow the slots others leave unused; when one wants a slot and none is
// free, it is refused and says so (a Redis pub/sub message), and every
// process holding more than its share gives back at once its idle
// connections beyond it (pool.Reclaimer: the pool closes them, counted in
// its Stats.Destroys.Yielded). When the process refused is below its share,
// the others also close connections given back beyond their shares,
// instead of serving their own waiting callers, until it has its share;
// and no process above its share takes a free slot meanwhile. Stats shows
// the share, the members and the slots borrowed.
//
// Share makes the Guards built from a dbguard.Config (a respool Config's
// Resilience) share a database's connection rate and what stops dialing,
// through the same Redis: ConnectRate becomes the rate of every process
// together (RateStore: a GCRA in one Lua script on Redis's clock), and a
// process whose circuit opens or whose creations pause tells the others on
// the channel "respool:signal:"+Name, which pause their creations as long.
// While Redis does not answer, each process counts its share of the rate
// alone (the rate divided by the processes Redis last counted), and
// signals are sent again, and read by Guards subscribing again, while they
// hold.
//
// Limits: a process opens no connection while Redis does not answer (one
// that held none serves nothing until Redis is back); and a process cut off
// from Redis (while the others reach it) for longer than TTL keeps the
// connections it has while their leases expire and others take the slots,
// so the sum may exceed Max until it hears from Redis again and gives back
// what is owed. The scripts need Redis 5 or later (TIME before a
// write); every key of a budget is in one hash slot ({Name}), so that they
// run on a Redis Cluster too.
package redisbudget
