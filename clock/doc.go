// Package clock is where respool reads the time and sets its timers: one
// Clock interface for the pool, every resilience mechanism, dbguard, chaos,
// health and httpguard, so that one virtual clock can drive them all
// together in a test.
//
// Every Config with a Clock field (pool, the resilience mechanisms, dbguard,
// chaos, health, httpguard) takes one; a nil Clock means System(). Those
// packages call it for every time they read and timer they set;
// applications set a Clock only in tests, with clock/clocktest.
package clock
