// Package pause is a pool-wide pause: a gate in front of every caller that
// closes when the server asks to slow down, so that nobody hammers it while
// it recovers.
//
// Application code calls it to guard any call by hand or in a
// compose.Stack. dbguard builds one per database from its PausePreset (the
// server's "too many connections"), httpguard's Transport builds one for
// 429 and 503 answers, and health and metrics/prometheus read its State.
//
// When an operation's error is one that Config.Classify maps to "the server
// asks us to slow down for d" (PostgreSQL's too_many_connections, MySQL's
// 1040, an HTTP 429 with Retry-After...), the gate closes until now+d.
// Later signals extend the pause; none shortens it. Callers that arrive
// meanwhile wait behind the gate in FIFO order, each until its context ends
// (a caller whose deadline falls before the gate opens is rejected at once,
// with the gate's opening time as its retry-after; so is a waiter when the
// gate closes again or longer and its deadline now falls first). With
// Config.NoWait no caller waits behind the closed gate: each is rejected at
// once, and those waiting for the probe's outcome are rejected when it
// closes the gate again.
//
// When the pause is over, one probe goes first. If it succeeds (or fails in
// a way that is not a slow-down signal), the gate opens and the waiters
// follow, in order. If it meets the signal again, or the signal comes again
// within EscalationWindow of reopening, the next pause grows by Escalation
// (up to MaxPause): the escalation a server applies to clients that keep
// knocking during its cessation period (Google Ads grows 15s to 15 minutes)
// is avoided by going slower ourselves first.
//
// Other libraries reject while a service is unhealthy; this one waits, since
// the server said how long. Its state (open, until when, why, how many wait)
// is readable through State. A Pause is a resilience.Guard; while the gate
// is open, Enter and Exit cost an atomic load each and allocate nothing.
package pause
