// Package ratelimit limits how many operations run per period.
//
// Application code calls it to meter any call by hand or in a
// compose.Stack (as examples/httpservice meters its requests). dbguard
// builds a Limiter for the connection rate (respool_connect_rate), health
// and metrics/prometheus read its Stats, and httpguard answers its
// rejections with 429.
//
// Five algorithms share one Limit (Permits per Period, and a Burst):
//
//   - TokenBucket (default): Burst permits at most, refilled at
//     Permits/Period; computed as a GCRA (one theoretical arrival time per
//     key, updated by compare-and-swap), which admits exactly what a token
//     bucket admits: the tests check it against golang.org/x/time/rate and
//     an exact token bucket. Time is counted in fractions of a nanosecond,
//     so that Period/Permits is exact (333⅓ns at 3,000,000/s); for a limit
//     whose depth, Burst × Period/Permits, in those fractions would not fit
//     int64 (2⁴⁰ permits an hour, 1,234,567 an hour), the fraction is
//     coarser and the interval rounded up: never more than the limit, and
//     less by a share of it of at most about Burst/2⁶⁰ (or 2⁻³¹).
//   - FixedWindow: Permits per window [kP, (k+1)P); up to twice Permits can
//     pass around a window's edge.
//   - SlidingLog: the exact count of permits taken in the last Period, from
//     a log of their times (memory grows with Permits).
//   - SlidingWindow: the sliding window counter; the previous window's count
//     weighted by how much of it the sliding window still covers.
//   - LeakyBucket: the leaky bucket as a queue; permits leave evenly spaced,
//     Period/Permits apart, and a caller may be given a slot up to Burst
//     permits ahead, which it waits for: traffic is smoothed, not bursty.
//     A caller whose context ends before its slot gives the slot back
//     unless a later caller was scheduled after it.
//
// A call that finds no permit is rejected at once with a
// *resilience.RejectedError matching ErrLimited whose retry-after says when
// the permits would be back, or, with QueueSize > 0, waits in a FIFO queue
// (at most QueueSize callers, each at most MaxWait and until its context
// ends). Acquire takes n permits; Drain empties a key (DrainOn does it when
// an operation's error says the quota is gone); SetLimit changes the limit
// at run time, at once: the permits taken stay taken, and come back at the
// new rate (as with x/time/rate's SetLimit).
//
// Keyed keeps one limit per key; keys whose state is back to that of a
// fresh key are evicted, so eviction never lets more through.
//
// The state sits behind Store, whose default is in memory. A shared store
// (Redis, SQL) implements Take, Drain and CancelSlot (which may do nothing)
// as one atomic operation each on one key (a script, a conditional UPDATE):
// no callbacks, no locks held across calls. Limiters with different limits
// may share a store: each key is counted, and evicted, by the limit it is
// taken under.
//
// The unkeyed token bucket's success path takes no lock and allocates
// nothing (SetLimit replaces its state; so does the passing of time, for a
// limit counted in fractions so fine that int64 holds only seconds of them:
// one small allocation a second at most).
package ratelimit
