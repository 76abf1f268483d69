// Package delay computes how long to wait before the next attempt: the delay
// strategies shared by retry (between attempts) and breaker (how long the
// circuit stays open), with an optional cap and jitter.
//
// Configs that take a delay use it (retry.Config.Delay,
// breaker.Config.OpenDelay), as do dbguard's presets and package respool's
// transaction retry; applications fill a Strategy and rarely call it
// directly.
//
// A Strategy is a value; its zero value means "the default of the mechanism
// that uses it", which that mechanism documents.
package delay
