// Package dbbudget shares a connection budget among processes through the
// database itself, with no other infrastructure: a pool.Budget
// (pool.Config.Budget, respool.Config's Pool.Budget) whose slots are locks
// held by one coordinating session per process, so that the connections
// of every process sharing its Name never number more than Max together,
// and the slots of a process that dies come back when the server sees its
// session end (kill -9 included: the kernel closes the socket).
//
//	cfg, err := respool.ParseDSN(dsn)
//	b, err := dbbudget.New(ctx, dbbudget.Config{DSN: dsn, Name: "orders-db", Max: 200})
//	defer b.Close()
//	cfg.Pool.Budget = b
//	c, err := respool.NewConnector(*cfg)
//
// # Locks
//
// PostgreSQL: slot i is the session-level advisory lock (k, i) of the
// two-key space (pg_try_advisory_lock(int4, int4)), k derived from Name;
// each process also holds a member lock (k', its backend PID), and a want
// lock (k”, its PID) while it is refused. MySQL and MariaDB: slot i is the
// user lock "respool:HASH:s<i>" (GET_LOCK(name, 0)), the member lock
// "respool:HASH:m<j>" for the first j free in [0, Max], the want lock
// "respool:HASH:w<j>". An Acquire is one statement (one round trip) that
// locks the first free slot; a release unlocks it. The session is used by
// one caller at a time.
//
// Collisions: the keys are FNV-1a hashes of Name (31 bits for each of
// PostgreSQL's three spaces, 64 bits for MySQL's names). Two budgets whose
// hashes meet share slots (each is then refused sooner: the sum stays
// within the smaller Max, never beyond). So would an application's own
// pg_advisory_lock(int4, int4) on the same first key; single-key locks
// (pg_advisory_lock(bigint)) are another space and never meet them.
// PostgreSQL's advisory locks belong to one database: processes share a
// budget when they connect to the same database. MySQL's user locks belong
// to the server.
//
// # Fair share
//
// Every heartbeat (250ms), and at once when another member starts wanting
// (PostgreSQL LISTEN/NOTIFY on a channel derived from Name; MySQL polls at
// the heartbeat), each process takes a census (PostgreSQL: pg_locks grouped
// by PID; MySQL: IS_USED_LOCK of each name): members are the processes
// holding a member lock, share = Max / members (rounded down), and each
// member's slots are the slot locks it holds. A process refused an Acquire
// holds its want lock for 500ms after its last refusal; it is needy while
// it holds fewer slots than its share. A process over its share asks the
// pools attached to it (Attach, which pool.New calls: pool.Reclaimer) for
// the slots over it: objects in use too (as they are given back) while a
// needy process waits, idle ones only while others merely want more,
// nothing otherwise. A process may take free slots beyond its share
// (borrow) unless a needy process waits.
//
// # The session may fail; queries may not
//
// An Acquire waits at most Timeout for the session (another Acquire or
// the heartbeat may be using it) and Timeout for the database's answer. A
// session that fails, or does not answer within Timeout, is closed (the
// server frees its locks) and the process keeps within the slots it held
// when the session last answered: a connection closed meanwhile can be
// opened again, no more. It logs once, dials again in the background
// (backoff from 50ms doubled to 2s; each dial bounded by 5s), and locks a
// slot again for each held: those others took meanwhile are counted in
// pool.BudgetStats.Unregistered, are locked again as slots come free, and take the
// place of new ones (an Acquire's slot goes to one of them first).
//
// # Signals
//
// Share (independent of Budget) makes the Guards of processes sharing a
// PostgreSQL database tell each other, with LISTEN/NOTIFY, what stops them
// dialing: one process's pause (back-pressure) or open circuit pauses the
// others' creations as long, as redisbudget.Share does through Redis.
// Each Guard holds a session of its own for it; nothing is stored in the
// database: a Guard that joins during a pause learns it from the Guard
// that paused, which answers its hello (a process that ended meanwhile is
// not heard). MySQL and MariaDB have no LISTEN/NOTIFY: Share refuses
// their DSN.
//
// # Requirements
//
// The DSN must reach the server itself. Behind a pooler in transaction or
// statement mode (PgBouncer, pgcat, Supavisor), a session-level lock stays
// on a server session that other clients get, and is not freed when the
// process dies: New refuses a PostgreSQL DSN whose backend PID differs
// from the one the server's startup message gave (poolers invent it),
// with an error matching ErrPooler. The pools' connections may still go
// through the pooler: only the budget's DSN must not. A MySQL proxy
// (ProxySQL, MaxScale) is not detected: give the budget the server's own
// address.
//
// Privileges: PostgreSQL, none beyond CONNECT on the database
// (pg_try_advisory_lock, pg_notify and LISTEN need none; pg_locks is
// readable by every role). MySQL and MariaDB: none (GET_LOCK, RELEASE_LOCK
// and IS_USED_LOCK need none). Each process holds one session more than
// its pools (the server's max_connections must allow for it); the session
// is named "respool budget NAME" (application_name) on PostgreSQL unless
// the DSN names it. MySQL 5.7 or later, or MariaDB 10.0.2 or later (several
// locks per session). A heartbeat is one query, and PostgreSQL's reads
// pg_locks, a moment of each lock partition's lock: cheap, every 250ms per
// process.
package dbbudget
