// Package pgxfactory is a factory.Factory of native pgx connections
// (*pgx.Conn), for users who want pgx's own API with respool's pool and leak
// detection:
//
//	f, err := pgxfactory.New("postgres://app@db/app")
//	p, err := pool.New[*pgx.Conn](f, pool.Config{MaxObjects: 10})
package pgxfactory
