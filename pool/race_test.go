//go:build race

package pool

// raceEnabled: the race detector makes sync.Pool drop some of what is put
// in it, so that counts of allocations do not hold.
const raceEnabled = true
