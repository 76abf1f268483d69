package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sample is go test -bench output of two -count runs, with the lines around
// results that go test prints and a log line, all to be ignored.
const sample = `goos: linux
goarch: amd64
pkg: github.com/respool/respool/bench
cpu: Intel(R) Xeon(R) Processor
BenchmarkUncontended/pool=respool-2         	 3598058	        60.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkUncontended/pool=puddle-2          	 1813672	       120.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkUncontended/pool=respool-leak-2    	  525921	       600.0 ns/op	      80 B/op	       4 allocs/op
BenchmarkOversubscribed/pool=respool-2      	  316914	      1000 ns/op	    821648 ops/s	    100000 p99-wait-ns	       4 B/op	       0 allocs/op
BenchmarkOversubscribed/pool=puddle-2       	  106923	      2000 ns/op	    454931 ops/s	    300000 p99-wait-ns	     175 B/op	       2 allocs/op
BenchmarkUncontended/pool=respool-2         	 3598058	        70.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkUncontended/pool=puddle-2          	 1813672	       130.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkUncontended/pool=respool-leak-2    	  525921	       500.0 ns/op	      80 B/op	       4 allocs/op
    bench_test.go:99: a log line
BenchmarkOversubscribed/pool=respool-2      	  316914	      1400 ns/op	    821648 ops/s	    140000 p99-wait-ns	       4 B/op	       0 allocs/op
BenchmarkOversubscribed/pool=puddle-2       	  106923	      2200 ns/op	    454931 ops/s	    330000 p99-wait-ns	     175 B/op	       2 allocs/op
BenchmarkOversubscribed/pool=respool-2      	  316914	      1200 ns/op	    821648 ops/s	    200000 p99-wait-ns	       4 B/op	       0 allocs/op
BenchmarkOversubscribed/pool=puddle-2       	  106923	      2100 ns/op	    454931 ops/s	    320000 p99-wait-ns	     175 B/op	       2 allocs/op
PASS
ok  	github.com/respool/respool/bench	4.670s
`

func TestParse(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ scen, pool, unit string }
	// Medians of two runs are the mean of the two; of three, the middle.
	// -1 means no value in that unit (or no such pool).
	want := map[key]float64{
		{"Uncontended", "respool", "ns/op"}:          65,
		{"Uncontended", "puddle", "ns/op"}:           125,
		{"Uncontended", "respool-leak", "ns/op"}:     550,
		{"Uncontended", "respool-leak", "allocs/op"}: 4,
		{"Uncontended", "respool", "p99-wait-ns"}:    -1,
		{"Oversubscribed", "respool", "ns/op"}:       1200,
		{"Oversubscribed", "respool", "p99-wait-ns"}: 140000,
		{"Oversubscribed", "puddle", "p99-wait-ns"}:  320000,
		{"Oversubscribed", "puddle", "ops/s"}:        454931,
		{"Oversubscribed", "respool-leak", "ns/op"}:  -1,
	}
	find := func(k key) *poolResult {
		for _, s := range res.scenarios {
			for _, p := range s.pools {
				if s.name == k.scen && p.name == k.pool {
					return p
				}
			}
		}
		return nil
	}
	for k, w := range want {
		p := find(k)
		if p == nil {
			if w != -1 {
				t.Errorf("%v: pool not found", k)
			}
			continue
		}
		got, ok := p.median(k.unit)
		switch {
		case w == -1 && ok:
			t.Errorf("%v: median %v, want none", k, got)
		case w != -1 && (!ok || got != w):
			t.Errorf("%v: median %v (%v), want %v", k, got, ok, w)
		}
	}

	var names []string
	for _, s := range res.scenarios {
		for _, p := range s.pools {
			names = append(names, s.name+"/"+p.name)
		}
	}
	if got, want := strings.Join(names, " "),
		"Uncontended/respool Uncontended/puddle Uncontended/respool-leak Oversubscribed/respool Oversubscribed/puddle"; got != want {
		t.Errorf("order: got %q, want %q", got, want)
	}
	if n := find(key{"Oversubscribed", "respool", ""}).runs; n != 3 {
		t.Errorf("Oversubscribed/respool runs = %d, want 3", n)
	}
}

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(sample), &out); err != nil {
		t.Fatal(err)
	}
	want := `Uncontended
  respool       2 runs   65 ns/op  0.52x puddle  0 allocs/op
  puddle        2 runs  125 ns/op  1.00x puddle  0 allocs/op
  respool-leak  2 runs  550 ns/op  4.40x puddle  4 allocs/op

Oversubscribed
  respool  3 runs  1200 ns/op  0.57x puddle  140000 p99-wait-ns  0.44x puddle  0 allocs/op
  puddle   3 runs  2100 ns/op  1.00x puddle  320000 p99-wait-ns  1.00x puddle  2 allocs/op
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestRunNoResults(t *testing.T) {
	if err := run(strings.NewReader("PASS\nok\n"), new(strings.Builder)); err == nil {
		t.Error("no error for input without results")
	}
}

func TestSplitName(t *testing.T) {
	for _, c := range []struct{ in, scen, pool string }{
		{"BenchmarkParallel/pool=chan-2", "Parallel", "chan"},
		{"BenchmarkUncontended/pool=respool-leak-16", "Uncontended", "respool-leak"},
		{"BenchmarkX/pool=sql/size=8-2", "X/size=8", "sql"},
		{"BenchmarkPlain-2", "Plain", "-"},
		{"BenchmarkNoProcs/pool=puddle", "NoProcs", "puddle"},
	} {
		if scen, pool := splitName(c.in); scen != c.scen || pool != c.pool {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", c.in, scen, pool, c.scen, c.pool)
		}
	}
}

// TestBaselines checks that each scenario is compared with the first
// baseline it has, and that impl= names an implementation as pool= does.
func TestBaselines(t *testing.T) {
	saved := baselines
	defer func() { baselines = saved }()
	baselines = []string{"gobreaker", "rate"}
	in := `BenchmarkBreaker/impl=respool-2   100  10.0 ns/op  0 allocs/op
BenchmarkBreaker/impl=gobreaker-2 100 100.0 ns/op  0 allocs/op
BenchmarkLimiter/impl=respool-2   100  20.0 ns/op  0 allocs/op
BenchmarkLimiter/impl=rate-2      100  40.0 ns/op  0 allocs/op
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.10x gobreaker", "0.50x rate"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
