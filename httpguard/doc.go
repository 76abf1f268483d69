// Package httpguard carries respool's overload answers across HTTP, both
// ways.
//
// HTTP services call it: a server in front of its pools (as
// examples/httpservice) answers their refusals through a Server, and a
// client of such a server sets a Transport as its http.Client's transport.
// No package of the library imports it.
//
// Server side, a Server turns the errors by which a pool or a resilience
// mechanism refuses work into the answers clients and load balancers act
// on, instead of a 500: 503 Service Unavailable with Retry-After when the
// pool's wait queue is full (pool.ErrQueueFull), the overload policy or
// the acquire timeout failed a take, creations fail (a *pool.CreateError,
// with its RetryAt), a breaker is open or a pause holds; 429 Too Many
// Requests with Retry-After when a rate limiter rejects. Handler adapts a
// handler that returns an error; Admit is middleware that admits each
// request through a resilience.Guard (a rate limiter, a breaker) first.
//
// Client side, a Transport (an http.RoundTripper) honours a server's 429
// and 503: their Retry-After closes a pause shared by every request through
// the Transport (the "slow down" reaches all callers at once, not only the
// one that met it), the request is retried once the server's time has
// passed, and an optional breaker stops calls to a failing server.
//
// The package reads packages pool and resilience only.
package httpguard
