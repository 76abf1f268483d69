// Package delay computes how long to wait before the next attempt: the delay
// strategies shared by retry (between attempts) and breaker (how long the
// circuit stays open), with an optional cap and jitter.
//
// A Strategy is a value; its zero value means "the default of the mechanism
// that uses it", which that mechanism documents.
package delay
