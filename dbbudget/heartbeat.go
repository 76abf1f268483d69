package dbbudget

import (
	"github.com/respool/respool/internal/reclaim"
	"github.com/respool/respool/pool"

	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// run is the heartbeat, until Close: every heartbeat (and at once when
// kicked: a want began here or elsewhere) it takes the census and asks the
// pools back what is over the share; between heartbeats it waits on the
// session for notifications; while the session is lost it dials again,
// with a backoff doubled from backoffMin to backoffMax.
func (b *Budget) run() {
	defer close(b.done)
	backoff := backoffMin
	for b.ctx.Err() == nil {
		b.mu.Lock()
		down := b.down
		b.mu.Unlock()
		if !down {
			b.beat()
			b.waitUntil(time.Now().Add(b.every))
			continue
		}
		if b.redial() {
			backoff = backoffMin
			continue
		}
		d := backoff/2 + rand.N(backoff/2+1) // jitter: processes that lost the server together do not all dial together
		backoff = min(2*backoff, backoffMax)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-b.ctx.Done():
			t.Stop()
		}
	}
}

// kick asks for a heartbeat now. It does not block, and may be called with
// b.mu held.
func (b *Budget) kick() {
	select {
	case b.kickc <- struct{}{}:
	default:
	}
	b.endWait()
}

// endWait ends the heartbeat's wait on the session, if it waits.
func (b *Budget) endWait() {
	b.wmu.Lock()
	if b.waitCancel != nil {
		b.waitCancel()
	}
	b.wmu.Unlock()
}

// waitUntil holds the session, waiting for notifications, until deadline,
// a kick or Close; it makes way for every caller of lockSession meanwhile.
func (b *Budget) waitUntil(deadline time.Time) {
	for time.Now().Before(deadline) && len(b.kickc) == 0 {
		s := b.heartbeatSession()
		if s == nil {
			return
		}
		ctx, cancel := context.WithDeadline(b.ctx, deadline)
		b.wmu.Lock()
		b.waitCancel = cancel
		b.wmu.Unlock()
		if b.tokWanted.Load() > 0 || len(b.kickc) > 0 { // set before waitCancel was: they could not end the wait
			cancel()
		}
		err := s.wait(ctx)
		b.wmu.Lock()
		b.waitCancel = nil
		b.wmu.Unlock()
		cancel()
		if err != nil {
			b.lost(err)
		}
		b.unlockSession()
		if err != nil || b.ctx.Err() != nil {
			return
		}
	}
}

// heartbeatSession waits for the session's token (no bound but Close:
// the heartbeat has nothing else to do) and returns the session, or nil
// (the token sent back) when it is lost or the Budget closed.
func (b *Budget) heartbeatSession() session {
	select {
	case <-b.tok:
	case <-b.ctx.Done():
		return nil
	}
	if b.sess == nil {
		b.unlockSession()
	}
	return b.sess
}

// beat takes the census (see the package documentation): it first gives
// back the spare locks, locks slots for those held without one, and takes
// or gives back the want lock; then it asks the pools back what is over
// the share.
func (b *Budget) beat() {
	select {
	case <-b.kickc:
	default:
	}
	s := b.heartbeatSession()
	if s == nil {
		return
	}
	b.mu.Lock()
	gen, spare := b.gen, b.spare
	b.spare = nil
	var bare []*slot // held without a lock
	for sl := range b.held {
		if sl.idx < 0 {
			bare = append(bare, sl)
		}
	}
	not, first := b.lockedLocked(), b.nextFirstLocked()
	wanting := !b.lastRefused.IsZero() && time.Since(b.lastRefused) < wantHold
	wantOn := b.wantOn
	b.mu.Unlock()

	ctx, cancel := context.WithTimeout(b.ctx, beatBound)
	defer cancel()
	var err error
	if len(spare) > 0 {
		err = s.give(ctx, spare)
	}
	if err == nil && len(bare) > 0 {
		var got []int
		if got, err = s.take(ctx, not, len(bare), first); err == nil {
			b.mu.Lock()
			for _, sl := range bare {
				if _, ok := b.held[sl]; ok && sl.idx < 0 && len(got) > 0 {
					sl.idx, sl.gen, got = got[0], gen, got[1:]
				}
			}
			b.spare = append(b.spare, got...) // their slots were given back meanwhile: given back next time
			b.mu.Unlock()
		}
	}
	if err == nil && wanting != wantOn {
		if err = s.want(ctx, wanting); err == nil {
			b.mu.Lock()
			b.wantOn = wanting
			b.mu.Unlock()
		}
	}
	var rows []holding
	if err == nil {
		rows, err = s.census(ctx)
	}
	if err != nil {
		b.lost(err)
		b.unlockSession()
		b.askPools(0, false)
		return
	}
	b.mu.Lock()
	b.view = takeCensus(b.c.Max, s.id(), rows)
	b.known = len(b.held)
	n, inUse := b.view.reclaim(len(b.held))
	b.mu.Unlock()
	b.unlockSession()
	b.askPools(n, inUse)
}

// askPools spreads a request for n objects back across the attached pools
// (from the heartbeat only: it owns attached.asked). A pool asked nothing
// before and nothing now is not called.
func (b *Budget) askPools(n int, inUse bool) {
	b.mu.Lock()
	b.reclaiming = n
	pools := slices.Clone(b.pools)
	first := b.rotate
	b.rotate++
	b.mu.Unlock()
	for i, part := range reclaim.Spread(n, len(pools), first) {
		a := pools[i]
		if part == 0 && !a.asked {
			continue
		}
		a.asked = part > 0
		a.reclaim(part, inUse && part > 0)
	}
}

// lost ends the session after err (tok held): the server frees its locks.
// Acquire keeps within the slots held meanwhile; run dials again. It logs
// once, unless Close ended the session.
func (b *Budget) lost(err error) {
	if b.sess == nil {
		return
	}
	b.sess.close()
	b.sess = nil
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	b.wantOn = false
	b.spare = nil
	for sl := range b.held {
		sl.idx = -1
	}
	if b.closed || b.ctx.Err() != nil {
		return
	}
	b.storeErrors++
	if !b.down {
		b.down = true
		b.c.Logger.Warn("dbbudget: the coordinating session is lost: keeping within the slots held until it is back",
			slog.String("budget", b.c.Name), slog.String("database", b.dialer.engine()), slog.Int("held", b.known),
			slog.String("error", b.secrets.Redact(err).Error()))
	}
}

// redial opens a new session and locks a slot for each held: those it
// cannot lock (others took them meanwhile) stay unregistered until slots
// are free (beat) or they are released.
func (b *Budget) redial() bool {
	ctx, cancel := context.WithTimeout(b.ctx, dialBound)
	defer cancel()
	s, err := b.dialer.dial(ctx, b.kick)
	if err != nil {
		b.mu.Lock()
		b.storeErrors++
		b.mu.Unlock()
		return false
	}
	select {
	case <-b.tok:
	case <-b.ctx.Done():
		s.close()
		return false
	}
	defer b.unlockSession()
	b.mu.Lock()
	n, first := len(b.held), b.nextFirstLocked()
	b.mu.Unlock()
	var got []int
	if n > 0 {
		tctx, cancel := context.WithTimeout(b.ctx, beatBound)
		got, err = s.take(tctx, []int{}, n, first)
		cancel()
		if err != nil {
			s.close()
			b.mu.Lock()
			b.storeErrors++
			b.mu.Unlock()
			return false
		}
	}
	b.sess = s
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	taken := len(got)
	for sl := range b.held {
		if len(got) > 0 {
			sl.idx, sl.gen, got = got[0], b.gen, got[1:]
		}
	}
	b.spare = got // released while it dialed
	b.down = false
	b.known = len(b.held)
	b.c.Logger.Info("dbbudget: the coordinating session is back",
		slog.String("budget", b.c.Name), slog.String("database", b.dialer.engine()),
		slog.Int("held", len(b.held)), slog.Int("unregistered", len(b.held)-min(taken, len(b.held))))
	return true
}

// Attach attaches a pool's reclaim func (pool.Reclaimer: a pool calls it
// once, at New): each heartbeat asks the attached pools, spread evenly,
// for the slots this process holds over its share while another process
// wants slots: reclaim(n, true) while one below its share waits (idle
// objects now, objects in use as they are given back), reclaim(n, false)
// while others only borrow (idle objects), reclaim(0, false) to end it.
// detach detaches it.
func (b *Budget) Attach(reclaim func(n int, inUse bool)) (detach func()) {
	a := &attached{reclaim: reclaim}
	b.mu.Lock()
	b.pools = append(b.pools, a)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.pools = slices.DeleteFunc(b.pools, func(p *attached) bool { return p == a })
			b.mu.Unlock()
		})
	}
}

// Stats returns a snapshot of the Budget (a respool pool's Stats.Budget
// holds it too). StoreDown: the coordinating session is lost
// (reconnecting); Unregistered: slots held but not locked in the
// database, taken while the session was lost or lost with it.
func (b *Budget) Stats() pool.BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := pool.BudgetStats{Held: len(b.held), Share: b.view.share, Members: b.view.members, StoreDown: b.down,
		Reclaiming: b.reclaiming, Refused: b.refused, StoreErrors: b.storeErrors}
	s.Borrowed = max(0, s.Held-s.Share)
	for sl := range b.held {
		if sl.idx < 0 {
			s.Unregistered++
		}
	}
	return s
}

// Close stops the heartbeat and ends the coordinating session, which
// frees every lock this process holds (call it after the pools using the
// Budget are closed). Acquire fails after it.
func (b *Budget) Close() error {
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.cancel()
		<-b.done
		<-b.tok // an Acquire or release on it ends: its statement's context was b.ctx
		if b.sess != nil {
			b.sess.close()
			b.sess = nil
		}
		b.mu.Lock()
		clear(b.held)
		b.spare = nil
		b.mu.Unlock()
		b.unlockSession()
	})
	return nil
}
