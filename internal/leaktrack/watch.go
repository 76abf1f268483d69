package leaktrack

import "runtime"

// Token is what a holder keeps reachable while it holds an object, one per
// lease: a copy of an earlier lease's holder keeps that lease's Token alive,
// never this one. It is 16 bytes, the size below which the runtime's tiny
// allocator could put it in one block with another object and so tie its
// reachability to that object's.
type Token struct {
	Lease uint64 // the lease it stands for
	_     uint64
}

// Watch arranges for lost(arg) to run, on the runtime's cleanup goroutine,
// once token is unreachable. arg must not reference token, nor may anything
// reachable from it. lost must be quick and must decide by itself whether the
// object was really lost (for example by checking that it was not given
// back), because it runs whenever a token is collected, given back or not.
//
// Watching costs a few hundred nanoseconds (a runtime special record and its
// cleanup), so a pool watches only the tokens of leases that outlast a
// garbage collection or a tick, not every lease.
func Watch[A any](token *Token, arg A, lost func(A)) {
	runtime.AddCleanup(token, lost, arg)
}

// gcSentinel is allocated only to be collected.
type gcSentinel struct{ _ [2]uint64 }

// OnGC calls fn after each garbage collection, on the runtime's cleanup
// goroutine, for as long as fn returns true. fn must be quick and must not
// block. It holds on to what fn references until it returns false.
func OnGC(fn func() bool) {
	runtime.AddCleanup(new(gcSentinel), func(fn func() bool) {
		if fn() {
			OnGC(fn)
		}
	}, fn)
}
