package pool

import (
	"context"
	"time"
)

// sharedBound is a deadline shared by the BeforeHandOut checks of callers
// whose contexts cannot end (context.Background, or values on it), so that
// such a check sets no timer of its own. Its context is a child of the
// pool's base context: Close ends it.
type sharedBound struct {
	ctx     context.Context
	cancel  context.CancelFunc // never called: the deadline or Close ends ctx
	renewAt time.Duration      // monotonic time since monoEpoch
}

// handOutBound returns ctx, which cannot end, with a deadline between half a
// TestTimeout and a TestTimeout from now, keeping ctx's values. The
// deadline is real time (context.WithTimeout), so it is read on the real
// monotonic clock (as the system clock's readings are, see clock), not the
// pool's Clock.
func (p *Pool[T]) handOutBound(ctx context.Context) context.Context {
	now := time.Since(monoEpoch)
	b := p.bound.Load()
	if b == nil || now >= b.renewAt {
		// Two callers may renew at once; the bound they replace ends by its
		// deadline.
		shared, cancel := context.WithTimeout(p.baseCtx, p.cfg.TestTimeout)
		b = &sharedBound{ctx: shared, cancel: cancel, renewAt: now + p.cfg.TestTimeout/2}
		p.bound.Store(b)
	}
	if ctx == context.Background() || ctx == context.TODO() {
		return b.ctx
	}
	return boundValues{Context: b.ctx, values: ctx}
}

// boundValues is a context's values with a shared bound's deadline.
type boundValues struct {
	context.Context                 // the shared bound: Deadline, Done, Err
	values          context.Context // the caller's, which cannot end
}

func (b boundValues) Value(key any) any { return b.values.Value(key) }
