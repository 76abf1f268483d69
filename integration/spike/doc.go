// Package spike measures how pools meet a spike of demand when opening a
// connection is slow (issue 16 item 6, after HikariCP-benchmark's
// SpikeLoadTest): a pool idle with 5 connections (max 50) gets 50 requests
// at once, each a 2 ms query, while every new connection takes 150 ms to
// open (a servers.Proxy delays it). A pool that opens a connection per
// waiter ends the spike with 50 connections, where the 5 it had serve the
// 50 queries in about 20 ms; it should serve them from connections given
// back, and keep no more than MinIdle (plus one) after its idle timeout.
//
// TestSpike runs respool's database/sql driver, pgxpool and database/sql
// over pgx's stdlib driver side by side on one PostgreSQL server, each
// through its own proxy, and logs a table: connections opened during the
// spike, the most open at once, the spike's duration, and the connections
// open once the idle timeout has passed.
package spike
