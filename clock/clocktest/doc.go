// Package clocktest has a virtual clock.Clock for tests: time moves only
// when the test says so, and a test can wait until the code under test has
// set its timers instead of sleeping.
//
// Tests, respool's and yours, use it to drive a pool, a mechanism and a
// guard together on one virtual clock: give the same *Clock to each one's
// Config.Clock. respool's own tests in pool, resilience, dbguard, chaos,
// health, httpguard and metrics/prometheus call it; no library code does.
//
//	clk := clocktest.New(time.Time{})
//	go func() { done <- r.Do(ctx, op) }()   // retries wait on clk
//	clk.WaitTimers(ctx, 1)                  // the retry is waiting
//	clk.Advance(500 * time.Millisecond)     // its delay is over
package clocktest
