package leaktrack

import "runtime"

// Token is what a holder keeps reachable while it holds an object. It is
// larger than the tiny allocator's 16-byte blocks, so it never shares a block
// with another object and its cleanup runs as soon as it alone becomes
// unreachable.
type Token struct {
	_ [3]uint64
}

// Watch arranges for lost(arg) to run, on the runtime's cleanup goroutine,
// once token is unreachable. arg must not reference token. lost must be quick
// and must decide by itself whether the object was really lost (for example by
// checking that it was not given back), because it runs whenever a token is
// collected, given back or not.
func Watch[A any](token *Token, arg A, lost func(A)) {
	runtime.AddCleanup(token, lost, arg)
}
