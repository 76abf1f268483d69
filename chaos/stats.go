package chaos

import "time"

// Stats are a Connector's counters.
type Stats struct {
	// Seed is the seed of the Faults' random draws: Config.Seed, or the
	// one chosen at random when it was 0.
	Seed uint64
	// Faults has the counters of each Fault by its Name: Faults["error"].Injected.
	Faults map[string]FaultStats
}

// FaultStats are one Fault's counters.
type FaultStats struct {
	Name string
	Kind Kind
	// On is false while the Fault is switched off (Fault.Off, Disable).
	On bool
	// Considered counts the calls the Fault considered: of its ops, while
	// on and in its windows.
	Considered int64
	// Injected counts the calls the Fault hit. A call that an earlier Fault
	// ended is not counted by later ones (see Config.Faults).
	Injected int64
	// Latency is, for KindLatency, the sum of the delays it added; a call
	// whose context ended sooner waited less.
	Latency time.Duration
}
