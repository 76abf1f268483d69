// Package resilience compares respool's resilience mechanisms with the
// libraries Go code uses for the same jobs, side by side in one
// `go test -bench` run, on their success paths, serial and parallel:
//
//   - BenchmarkBreaker*: respool's breaker.Breaker (count window, the
//     default Config) beside sony/gobreaker v2 and failsafe-go's circuit
//     breaker;
//   - BenchmarkLimiter*: respool's token-bucket ratelimit.Limiter beside
//     golang.org/x/time/rate's Limiter.Allow and failsafe-go's bursty
//     rate limiter;
//   - BenchmarkRetry*: a retry whose first attempt succeeds, respool's
//     retry.Retry beside failsafe-go's retry policy and cenkalti/backoff v5;
//   - BenchmarkComposed*: retry, breaker and rate limiter stacked, respool's
//     compose.Stack beside failsafe-go's With(retry, breaker, limiter);
//   - BenchmarkBulkhead*: respool's bulkhead beside failsafe-go's;
//   - BenchmarkFullStack*: all seven respool mechanisms stacked (no other
//     library has the pause), to show what the whole stack costs.
//
// Each scenario has one sub-benchmark per implementation (impl=name). Run
//
//	go test -run '^$' -bench . -count 10 -benchtime 200ms . | go run ../cmd/ratios -baseline gobreaker,rate,failsafe
//
// for medians and ratios. The code lives in _test.go files; this package
// exports nothing.
package resilience
