package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shortOptions are the demo's options cut short for a test: the same
// steps, in about eight seconds.
func shortOptions(out *bytes.Buffer) options {
	o := defaultOptions()
	o.Out = out
	o.WorkloadTime = time.Second
	o.PlainEvery = 500 * time.Millisecond
	// An outage as long as the demo's own (2 s), which goes on until the
	// breaker has opened (faultPlan.MaxOutage).
	o.Faults.Duration = 5 * time.Second
	o.Faults.OutageFrom = time.Second
	o.Faults.OutageTo = 3 * time.Second
	return o
}

// TestDemo runs the demo on embedded SQLite and checks that what it printed
// happened: each check passed, and the lines behind them are there.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), shortOptions(&out))
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	text := out.String()
	for _, want := range []string{
		"[ok  ] workload served",
		"[ok  ] acquire-wait quantiles",
		"[ok  ] queue-full rejection",
		"pool: wait queue full",             // a refused caller's error
		"ERROR LEAK-DETECTED pool=\"demo\"", // respool's log line, through slog
		"[ok  ] leak reported with its stack",
		"[ok  ] leaked slot reclaimed",
		"[ok  ] serialization failures retried",
		"[ok  ] lost connections replaced",
		"[ok  ] outage: callers failed fast",
		"[ok  ] outage: pool recovered",
		"WARN circuit opened pool=\"demo-faults\"", // the driver's log line
		"INFO circuit closed pool=\"demo-faults\"",
		"[ok  ] outage: circuit opened and closed",
		"[ok  ] no transaction lost or applied twice",
		"all 11 checks passed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The stack names the code that leaked (main.leakRows in the command).
	if !regexp.MustCompile(`taken at \S*\bleakRows `).MatchString(text) {
		t.Error("the leak check does not name leakRows")
	}
	if strings.ContainsAny(text, "\r\033") {
		t.Error("plain output holds terminal control characters")
	}
	// The figures printed are the pool's: so many refused, so many counted.
	m := regexp.MustCompile(`(\d+) refused at once with pool.ErrQueueFull \(Stats.QueueFull \+(\d+)\)`).FindStringSubmatch(text)
	if m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("queue-full line: got %q, want the same non-zero count twice", m)
	}
}

// TestOutageLastsUntilTheBreakerOpens checks that the fault step's check
// "circuit opened and closed" holds however few connection attempts the
// planned outage leaves room for (a machine busy enough gives few): an
// outage planned for 1ms, far too short for the breaker's window to fill
// with refused attempts, goes on until the breaker has opened, and the
// demo says so.
func TestOutageLastsUntilTheBreakerOpens(t *testing.T) {
	var out bytes.Buffer
	o := shortOptions(&out)
	o.Steps = []string{"workload", "faults"}
	o.WorkloadTime = 200 * time.Millisecond
	o.Faults.Duration = 3 * time.Second
	o.Faults.OutageFrom = time.Second
	o.Faults.OutageTo = time.Second + time.Millisecond
	err := run(context.Background(), o)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	text := out.String()
	for _, want := range []string{
		"[ok  ] outage: circuit opened and closed",
		"instead of 1ms: the breaker had not opened yet",
		"[ok  ] outage: pool recovered",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestDemoFailsWhenAStepFails checks that the demo does not claim what did
// not happen: with a wait queue longer than the burst, nobody is refused,
// and run fails naming the check.
func TestDemoFailsWhenAStepFails(t *testing.T) {
	var out bytes.Buffer
	o := shortOptions(&out)
	o.Steps = []string{"workload", "queue full"}
	o.WorkloadTime = 200 * time.Millisecond
	o.MaxQueue = o.Burst
	err := run(context.Background(), o)
	t.Log("\n" + out.String())
	if err == nil || !strings.Contains(err.Error(), "queue-full rejection") {
		t.Fatalf("run: got %v, want the queue-full check failed", err)
	}
	if !strings.Contains(out.String(), "[FAIL] queue-full rejection: ") {
		t.Error("output does not show the failed check")
	}
}

// TestLiveDisplay checks the terminal mode: the status line is redrawn in
// place and event lines are printed above it.
func TestLiveDisplay(t *testing.T) {
	var out bytes.Buffer
	d := newDisplay(&out, true, time.Second)
	d.setStatus("one", false)
	d.printf("event")
	d.setStatus("two", false)
	d.endStatus()
	got := regexp.MustCompile(`\[\s*\d+\.\ds\] `).ReplaceAllString(out.String(), "")
	want := clearLine + "one" + clearLine + "event\n" + "one" + clearLine + "two\n"
	if got != want {
		t.Errorf("live output:\n got %q\nwant %q", got, want)
	}
}
