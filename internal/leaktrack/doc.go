// Package leaktrack is the machinery behind the pool's leak tracking: tokens
// watched by the garbage collector and captured call sites. Only the pool
// uses it; it reports what it finds as pool events (pool.EventLeak, logged
// as LEAK-DETECTED; pool.EventHeldTooLong, as HELD-TOO-LONG). Users
// configure it through pool.Config's LeakTrackingDisabled,
// LeakCaptureStack and HoldThreshold.
//
// It imports no other respool package.
package leaktrack
