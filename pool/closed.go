package pool

// Closed reports whether Close or StartClose has been called: every Take
// from then on fails with ErrClosed. Health checks read it.
func (p *Pool[T]) Closed() bool { return p.closed.Load() }
