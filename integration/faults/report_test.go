package faults

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// column is one client on one server kind: a column of the report.
type column struct {
	client client
	kind   string
}

func (c column) String() string { return c.client.name + " (" + c.kind + ")" }

// report collects every outcome of TestFaults.
type report struct {
	mu       sync.Mutex
	cols     []column
	rows     []string                      // row labels, in the order they first came
	text     map[string]map[string]string  // row → column → text
	outcomes map[string]map[string]outcome // scenario → column → outcome
}

func newReport() *report {
	return &report{text: map[string]map[string]string{}, outcomes: map[string]map[string]outcome{}}
}

func (r *report) addColumn(c column) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.ContainsFunc(r.cols, func(d column) bool { return d.String() == c.String() }) {
		r.cols = append(r.cols, c)
	}
}

func (r *report) add(scenario string, c column, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcomes[scenario] == nil {
		r.outcomes[scenario] = map[string]outcome{}
	}
	r.outcomes[scenario][c.String()] = o
	for _, cl := range o.cells() {
		if r.text[cl.row] == nil {
			r.text[cl.row] = map[string]string{}
			r.rows = append(r.rows, cl.row)
		}
		r.text[cl.row][c.String()] = cl.text
	}
}

// outcome returns the outcome of scenario for c, or nil.
func (r *report) outcome(scenario string, c column) outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[scenario][c.String()]
}

// missing lists the scenarios and columns without an outcome: of those
// that ran when some were selected by a -run pattern naming subtests, of
// all otherwise.
func (r *report) missing(scenarios []scenario, ran map[string]bool, selected bool) []string {
	var out []string
	for _, sc := range scenarios {
		for _, c := range r.cols {
			key := sc.name + " for " + c.String()
			if r.outcome(sc.name, c) == nil && (ran[key] || !selected) {
				out = append(out, key)
			}
		}
	}
	return out
}

// table formats the report as a Markdown table, with a line saying how it
// was measured and the keys respool ran scenarios with.
func (r *report) table(took time.Duration, scenarios []scenario) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("| scenario |")
	for _, c := range r.cols {
		b.WriteString(" " + c.String() + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(r.cols)))
	b.WriteString("\n")
	for _, row := range r.rows {
		b.WriteString("| " + row + " |")
		for _, c := range r.cols {
			text := r.text[row][c.String()]
			if text == "" {
				text = "—"
			}
			b.WriteString(" " + text + " |")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n%d callers, pools of %d, every call with a %v deadline, through a counting proxy on loopback; "+
		"%s, %d CPUs, race detector %s; the suite took %v, servers' start included.\n",
		callers, poolSize, callDeadline, runtime.Version(), runtime.NumCPU(), onOff(raceEnabled), took.Round(time.Second))
	b.WriteString("respool runs with its defaults and " + poolKeys)
	for _, sc := range scenarios {
		if sc.respoolKeys != "" {
			b.WriteString("; in the " + sc.name + " scenario also with " + sc.respoolKeys + " (" + sc.keysWhy + ")")
		}
	}
	b.WriteString(".\n")
	for _, sc := range scenarios {
		if sc.callers == polite {
			b.WriteString("Callers call again at once after an error; " + politeRule + ".\n")
			break
		}
	}
	return b.String()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ms formats d in milliseconds, or seconds from 10 s.
func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// perSec formats a rate, or "—" for a negative one (not measured).
func perSec(r float64) string {
	if r < 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", r)
}

// percent formats n of total as a whole percentage.
func percent(n, total int) string {
	if total == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(total))
}
