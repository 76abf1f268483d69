// Package pgxfactory is a factory.Factory of native pgx connections
// (*pgx.Conn), for users who want pgx's own API with respool's pool and leak
// detection:
//
//	f, err := pgxfactory.New("postgres://app@db/app")
//	p, err := pool.New[*pgx.Conn](f, pool.Config{MaxObjects: 10})
//
// For the creation path of respool's database/sql driver (retry when
// nothing reached the server, a circuit breaker, the pause after "too many
// connections", an optional connect-rate limit), wrap it with package
// dbguard and give the pool the Guard's back-pressure classifier:
//
//	g, err := dbguard.New(dbguard.Config{})
//	p, err := pool.New(dbguard.Factory[*pgx.Conn](g, f), pool.Config{MaxObjects: 10, BackPressure: dbguard.BackPressure})
//
// A take then fails at once, with an error matching breaker.ErrOpen, while
// the circuit is open; g.Check before a take does the same when the pool
// has idle connections.
package pgxfactory
