// Package sharedrate tests redisbudget.Share on a real redis-server and
// PostgreSQL started on loopback: several processes' connect rate is one
// rate at Redis (measured over a window of Redis's clock), a Redis killed
// holds no connection attempt and leaves each process its share of the
// rate, and a process whose circuit opens (a dead server) or whose
// creations pause (back-pressure) stops the others dialing within a
// second.
package sharedrate
