// Package resil is the plumbing that respool's mechanisms share and nobody
// outside needs: the checks of a Config (which build a
// *resilience.ConfigError), the system-clock default and its fast-path test,
// the making of a rejection and the emission of an event, and the default
// and check of a delay.Strategy.
//
// It imports resilience, resilience/delay and clock; the mechanisms, pool,
// dbguard, chaos, health and httpguard import it.
package resil
