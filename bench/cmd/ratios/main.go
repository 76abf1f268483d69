// Command ratios reads `go test -bench` output on standard input (any number
// of -count runs) and prints, per scenario, each pool's median ns/op and
// p99-wait-ns (where reported) and its ratio to puddle's:
//
//	go test -run '^$' -bench . -count 10 . | go run ./cmd/ratios
//
// -baseline names the baselines, comma-separated: each scenario is compared
// with the first of them it has (default "puddle"):
//
//	go test -bench . ./resilience | go run ./cmd/ratios -baseline gobreaker,rate,failsafe
//
// A benchmark named BenchmarkScenario/pool=name-N (or impl=name) belongs to scenario
// "Scenario" and pool "name"; the -N GOMAXPROCS suffix is dropped. Lines that
// are not benchmark results are ignored.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// baselines are the pools a scenario may be compared with, in order of
// preference: a scenario's baseline is the first of them it has.
var baselines = []string{"puddle"}

// ratioUnits are the units shown with a ratio to the baseline, in order;
// infoUnits are shown as they are.
var (
	ratioUnits = []string{"ns/op", "p99-wait-ns"}
	infoUnits  = []string{"allocs/op", "ok/s", "late/s", "failed/s", "attempts/s", "lines/s"}
)

func main() {
	base := flag.String("baseline", strings.Join(baselines, ","), "comma-separated baselines; each scenario uses the first it has")
	flag.Parse()
	baselines = strings.Split(*base, ",")
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
}

// run parses r and writes the tables to w.
func run(r io.Reader, w io.Writer) error {
	res, err := parse(r)
	if err != nil {
		return err
	}
	if len(res.scenarios) == 0 {
		return fmt.Errorf("no benchmark results in input")
	}
	return res.write(w)
}

// results are the values read, by scenario, pool and unit.
type results struct {
	scenarios []*scenario // in order of first appearance
}

// scenario is one benchmark's pools.
type scenario struct {
	name  string
	pools []*poolResult // in order of first appearance
}

// poolResult is every value reported for one pool of one scenario.
type poolResult struct {
	name   string
	runs   int
	values map[string][]float64 // by unit
}

// procsSuffix is the -GOMAXPROCS suffix go test appends to benchmark names.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parse reads benchmark result lines: a name starting with "Benchmark", an
// iteration count, then value-unit pairs.
func parse(r io.Reader) (*results, error) {
	res := &results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			continue // not a result line (a log line, say)
		}
		vals := make(map[string]float64, (len(f)-2)/2)
		ok := true
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				ok = false
				break
			}
			vals[f[i+1]] = v
		}
		if !ok {
			continue
		}
		scen, pool := splitName(f[0])
		p := res.pool(scen, pool)
		p.runs++
		for unit, v := range vals {
			p.values[unit] = append(p.values[unit], v)
		}
	}
	return res, sc.Err()
}

// splitName splits "BenchmarkScenario/pool=name-N" into "Scenario" and
// "name". Other sub-benchmark levels stay in the scenario's name; a name
// without a pool= level is a scenario whose pool is "-".
func splitName(name string) (scen, pool string) {
	name = procsSuffix.ReplaceAllString(strings.TrimPrefix(name, "Benchmark"), "")
	parts := strings.Split(name, "/")
	pool = "-"
	for i, part := range parts {
		v, ok := strings.CutPrefix(part, "pool=")
		if !ok {
			v, ok = strings.CutPrefix(part, "impl=")
		}
		if ok {
			pool = v
			parts = slices.Delete(parts, i, i+1)
			break
		}
	}
	return strings.Join(parts, "/"), pool
}

// pool returns the entry of pool in scenario scen, adding either if new.
func (r *results) pool(scen, pool string) *poolResult {
	i := slices.IndexFunc(r.scenarios, func(s *scenario) bool { return s.name == scen })
	if i < 0 {
		r.scenarios = append(r.scenarios, &scenario{name: scen})
		i = len(r.scenarios) - 1
	}
	s := r.scenarios[i]
	j := slices.IndexFunc(s.pools, func(p *poolResult) bool { return p.name == pool })
	if j < 0 {
		s.pools = append(s.pools, &poolResult{name: pool, values: map[string][]float64{}})
		j = len(s.pools) - 1
	}
	return s.pools[j]
}

// median returns the median of p's values in unit, and whether there are any.
func (p *poolResult) median(unit string) (float64, bool) {
	return median(p.values[unit])
}

// median returns the median of vs, and whether vs has any values.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

// write prints one table per scenario: each pool's runs, then for each unit
// its median, and for ratioUnits the ratio to the baseline's median.
func (r *results) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, s := range r.scenarios {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintln(bw, s.name)
		var base *poolResult
		for _, name := range baselines {
			if j := slices.IndexFunc(s.pools, func(p *poolResult) bool { return p.name == name }); j >= 0 {
				base = s.pools[j]
				break
			}
		}
		ratioCols, infoCols := s.units(ratioUnits), s.units(infoUnits)
		var rows [][]string
		for _, p := range s.pools {
			row := []string{p.name, strconv.Itoa(p.runs) + " runs"}
			for _, unit := range ratioCols {
				if m, ok := p.median(unit); ok {
					row = append(row, formatValue(m)+" "+unit, ratio(m, base, unit))
				} else {
					row = append(row, "-", "-")
				}
			}
			for _, unit := range infoCols {
				if m, ok := p.median(unit); ok {
					row = append(row, formatValue(m)+" "+unit)
				} else {
					row = append(row, "-")
				}
			}
			rows = append(rows, row)
		}
		writeTable(bw, rows)
	}
	return bw.Flush()
}

// writeTable writes rows indented, with the first column aligned left and
// the others right.
func writeTable(w io.Writer, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len(cell))
			if i == 0 {
				b.WriteString(cell + pad)
			} else {
				b.WriteString("  " + pad + cell)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

// units returns those of units that some pool of s reported.
func (s *scenario) units(units []string) []string {
	var out []string
	for _, u := range units {
		if slices.ContainsFunc(s.pools, func(p *poolResult) bool { return len(p.values[u]) > 0 }) {
			out = append(out, u)
		}
	}
	return out
}

// ratio formats m over base's median in unit, as "0.45x puddle", or "-"
// when there is nothing to compare with.
func ratio(m float64, base *poolResult, unit string) string {
	if base == nil {
		return "-"
	}
	b, ok := base.median(unit)
	if !ok || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx %s", m/b, base.name)
}

// formatValue prints v with about four significant digits, no exponent and
// no decimals when it is whole.
func formatValue(v float64) string {
	switch {
	case v == math.Trunc(v) || v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
