// Package pgxdial is the dial-side care respool gives pgx connections,
// shared by the database/sql driver and respool.PgxFactory: no cancel
// request for a connection that never finished its startup
// (StartedCancelsOnly).
//
// It imports no other respool package.
package pgxdial
