package pool

import "slices"

// KeyedStats is a snapshot of a Keyed: its keys summed, and each key's.
type KeyedStats[K comparable] struct {
	// Stats sums every key's: its gauges those of the keys open or still
	// closing, its counters (and LastCreateError, the latest of any key)
	// those of every key ever, closed ones included. MaxObjects is the
	// Keyed's (the budget), EffectiveMaxObjects the most the keys may have
	// now (the budget, or less while back-pressure holds keys down). The
	// state of creations is that of the keys open: CreateFailuresInARow the
	// most of any, NextCreateAttempt the earliest, MeanHold the longest.
	Stats
	// WaitingForBudget is the callers waiting for a slot of the budget: their
	// key could create an object, but the other keys hold the budget. They
	// count in Waiting too.
	WaitingForBudget int
	// Keys is each key's Stats, as its Pool's Stats returns them.
	Keys map[K]Stats
}

// Stats returns a snapshot of every key, without asking the actor.
func (k *Keyed[K, T]) Stats() KeyedStats[K] {
	k.mu.Lock() // before statsMu, as Add takes them
	closed := k.closed
	k.mu.Unlock()
	k.statsMu.Lock()
	defer k.statsMu.Unlock()
	s := KeyedStats[K]{Stats: k.retired, Keys: make(map[K]Stats, len(k.pools))}
	s.Closed = closed
	// k.retired's histogram is not ours to add to.
	s.WaitHistogram.Counts = slices.Clone(s.WaitHistogram.Counts)
	effective := 0 // of the keys not closing
	for p, key := range k.pools {
		ps := p.Stats()
		s.addGauges(ps)
		s.addCounts(ps)
		if !p.closed.Load() {
			s.addState(ps)
			s.Keys[key] = ps
			effective += ps.EffectiveMaxObjects
		}
	}
	// The budget's count, not the keys' summed: each key's is read at
	// another moment, and a slot passing from one key to another meanwhile
	// would count twice.
	s.Total = int(k.b.totalNow.Load())
	s.MaxObjects, s.EffectiveMaxObjects = k.cfg.MaxObjects, k.cfg.MaxObjects
	if len(s.Keys) > 0 {
		s.EffectiveMaxObjects = min(effective, k.cfg.MaxObjects)
	}
	s.WaitingForBudget = int(k.b.waiters.Load())
	return s
}

// addGauges adds o's gauges to s.
func (s *Stats) addGauges(o Stats) {
	s.Total += o.Total
	s.Idle += o.Idle
	s.InUse += o.InUse
	s.Creating += o.Creating
	s.Testing += o.Testing
	s.Waiting += o.Waiting
	s.Queued += o.Queued
}

// addCounts adds o's counters to s, merges the histograms and keeps the
// latest LastCreateError.
func (s *Stats) addCounts(o Stats) {
	s.Takes += o.Takes
	s.Waits += o.Waits
	s.WaitTime += o.WaitTime
	s.QueueFull += o.QueueFull
	s.CancelledWaits += o.CancelledWaits
	s.AcquireTimeouts += o.AcquireTimeouts
	s.Creates += o.Creates
	s.CreateFailures += o.CreateFailures
	s.Destroys.add(o.Destroys)
	s.LeaksDetected += o.LeaksDetected
	s.HeldTooLong += o.HeldTooLong
	s.FailedFast += o.FailedFast
	s.BackPressureEvents += o.BackPressureEvents
	s.Overloaded += o.Overloaded
	if o.LastCreateError != nil && (s.LastCreateError == nil || o.LastCreateErrorAt.After(s.LastCreateErrorAt)) {
		s.LastCreateError, s.LastCreateErrorAt = o.LastCreateError, o.LastCreateErrorAt
	}
	if s.WaitHistogram.Counts == nil {
		s.WaitHistogram = Histogram{Bounds: o.WaitHistogram.Bounds, Counts: make([]uint64, len(o.WaitHistogram.Counts))}
	}
	for i, n := range o.WaitHistogram.Counts {
		s.WaitHistogram.Counts[i] += n
	}
}

// addState adds the state of o's creations to s, as KeyedStats documents.
func (s *Stats) addState(o Stats) {
	s.CreateFailuresInARow = max(s.CreateFailuresInARow, o.CreateFailuresInARow)
	if !o.NextCreateAttempt.IsZero() && (s.NextCreateAttempt.IsZero() || o.NextCreateAttempt.Before(s.NextCreateAttempt)) {
		s.NextCreateAttempt = o.NextCreateAttempt
	}
	s.MeanHold = max(s.MeanHold, o.MeanHold)
}
