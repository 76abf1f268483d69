package ratelimit

// MemoryStore and NewMemoryStore give the external tests the default
// in-memory Store, to share one between limiters as a shared store would be.
type MemoryStore = memoryStore

// NewMemoryStore returns an empty in-memory Store.
func NewMemoryStore() *MemoryStore { return newMemoryStore() }

// Len returns the keys m holds.
func (m *MemoryStore) Len() int { return m.len() }
