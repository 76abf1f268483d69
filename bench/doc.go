// Package bench compares respool's pool with other ways of pooling objects in
// Go, side by side in one `go test -bench` run:
//
//   - pool=respool: github.com/respool/respool/pool with leak tracking off;
//   - pool=puddle: github.com/jackc/puddle/v2, the pool under pgx;
//   - pool=sql: database/sql's connection pool over a driver that does nothing;
//   - pool=chan: a buffered channel of pre-made objects, the floor any pool
//     is measured against.
//
// Three scenarios, each a benchmark with one sub-benchmark per pool:
//
//   - BenchmarkUncontended: a pool of 8, one goroutine, Take and GiveBack
//     per op (pool=respool-leak adds respool with its default leak tracking);
//   - BenchmarkParallel: a pool of 64 under b.RunParallel, so nobody waits;
//   - BenchmarkOversubscribed: 64 goroutines share a pool of 4 and hold each
//     object for about 1µs of busy work; reports the 99th percentile of the
//     time Take waited (p99-wait-ns) and the throughput (ops/s).
//
// Two fault scenarios run in real time, only with -faults.scale set (see
// faults_test.go): BenchmarkOverload (a pool of 10 whose objects are held
// 200ms, 64 or 20 closed-loop callers with 1s deadlines; ok/s out of 50,
// for respool under each overload policy, puddle and database/sql) and
// BenchmarkCreateFailing (64 callers against a factory that always fails;
// creation attempts and log lines per second):
//
//	go test -run '^$' -bench 'Overload|CreateFailing' -benchtime 1x -count 3 . -faults.scale=1 | go run ./cmd/ratios
//
// The code lives in _test.go files; this package exports nothing. Run
//
//	go test -run '^$' -bench . -count 10 -benchtime 200ms . | tee bench.txt | go run ./cmd/ratios
//
// for a table of medians and ratios to puddle, or feed bench.txt to benchstat.
package bench
