// Package budget tests module github.com/respool/respool/redisbudget on a
// real redis-server and PostgreSQL started on loopback: the connections of
// several Connectors sharing one budget never number more than it at the
// server, a dead holder's slots come back within the lease's TTL, and a
// Redis that stops answering neither blocks a take nor lets the sum grow.
package budget
