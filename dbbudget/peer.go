package dbbudget

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/peersig"
	"github.com/respool/respool/resilience"
)

// hello is the kind of the line a Guard sends when its session begins:
// the others send again their signals that still hold (Share: catch-up
// without a table).
const hello = "hello"

// peer is one Guard joined to the others of its Name (Share) through a
// PostgreSQL session of its own: it sends its Guard's pauses and
// openings (pg_notify), and pauses its Guard's creations on theirs
// (LISTEN). The session is owned by run's goroutine.
type peer struct {
	c    *shareConfig
	id   string // this Guard: the signals it sends name it, and it ignores them
	g    *dbguard.Guard
	sent peersig.Sent

	out    chan signal // signals to send; full: dropped (the next will say as much)
	ctx    context.Context
	cancel context.CancelFunc // leave
	done   chan struct{}      // closed when run returns

	wmu  sync.Mutex         // guards wake
	wake context.CancelFunc // ends run's wait for notifications; nil when it does not wait

	// Owned by run's goroutine (the notifications are read on it too).
	own   map[string]time.Time // by kind: when this Guard's last signal ends (this process's clock)
	hello bool                 // another Guard said hello: send own again
	down  bool                 // the session is lost (logged)
}

// signal is one of this Guard's signals: kind, until till (this
// process's clock: the line says how long is left when it is sent).
type signal struct {
	kind string
	till time.Time
}

// join joins g to the Guards of c's Name: run dials the session in the
// background; leave stops it.
func join(g *dbguard.Guard, c *shareConfig) (tell resilience.Listener, leave func()) {
	p := newPeer(g, c)
	go p.run()
	return p.tell, p.leave
}

// newPeer returns g's peer, not yet running.
func newPeer(g *dbguard.Guard, c *shareConfig) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	return &peer{c: c, id: peersig.ProcessID(), g: g, out: make(chan signal, 8),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), own: map[string]time.Time{}}
}

// tell queues e's news, when it is a pause or an opening of this Guard's
// own (peersig.Of), and wakes run up. It does not block.
func (p *peer) tell(e resilience.Event) {
	kind, d, ok := peersig.Of(e)
	if !ok || !p.sent.Due(kind, e.Time.Add(d)) {
		return
	}
	select {
	case p.out <- signal{kind: kind, till: time.Now().Add(d)}:
	default:
	}
	p.wmu.Lock()
	if p.wake != nil {
		p.wake()
	}
	p.wmu.Unlock()
}

// leave stops run, and with it the session (closed within closeBound).
func (p *peer) leave() {
	p.cancel()
	<-p.done
}

// run keeps the session until leave: it dials it, serves it until it
// fails, and dials again after a backoff (backoffMin doubled up to
// backoffMax, jittered; reset by a session that began).
func (p *peer) run() {
	defer close(p.done)
	backoff := backoffMin
	for {
		conn, err := p.dial()
		if err == nil {
			backoff = backoffMin
			p.back()
			err = p.serve(conn)
			ctx, cancel := context.WithTimeout(context.Background(), closeBound)
			_ = conn.Close(ctx)
			cancel()
		}
		if p.ctx.Err() != nil {
			return
		}
		p.lost(err)
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// dial opens the session, within dialBound: it LISTENs on the channel,
// then says hello (after LISTEN took effect: the answers reach it).
func (p *peer) dial() (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, dialBound)
	defer cancel()
	cc := p.c.cc.Copy()
	cc.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) { p.receive(n.Payload) }
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	if _, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{p.c.channel}.Sanitize()); err == nil {
		err = p.notify(ctx, conn, hello, 0)
	}
	if err != nil {
		cctx, ccancel := context.WithTimeout(context.Background(), closeBound)
		_ = conn.Close(cctx)
		ccancel()
		return nil, err
	}
	return conn, nil
}

// serve sends this Guard's signals and reads the others' until the
// session fails (its error) or leave (nil). It first sends again those
// that still hold (sent while the session was lost, or before it).
func (p *peer) serve(conn *pgx.Conn) error {
	p.hello = true
	for {
		if err := p.sendAll(conn); err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(p.ctx)
		p.wmu.Lock()
		p.wake = cancel
		p.wmu.Unlock()
		if len(p.out) > 0 { // queued before wake was set: its tell could not end the wait
			cancel()
		}
		err := conn.PgConn().WaitForNotification(ctx)
		p.wmu.Lock()
		p.wake = nil
		p.wmu.Unlock()
		woken := ctx.Err() != nil
		cancel()
		switch {
		case p.ctx.Err() != nil:
			return nil
		case err != nil && !woken:
			return err
		}
	}
}

// sendAll sends the signals queued, and all this Guard's signals that
// still hold when another Guard said hello.
func (p *peer) sendAll(conn *pgx.Conn) error {
	for {
		select {
		case s := <-p.out:
			if s.till.After(p.own[s.kind]) {
				p.own[s.kind] = s.till
			}
			if err := p.send(conn, s.kind); err != nil {
				return err
			}
			continue
		default:
		}
		if !p.hello {
			return nil
		}
		p.hello = false
		for _, kind := range peersig.Kinds {
			if err := p.send(conn, kind); err != nil {
				return err
			}
		}
	}
}

// send sends this Guard's signal of kind, if it still holds.
func (p *peer) send(conn *pgx.Conn, kind string) error {
	left := time.Until(p.own[kind])
	if left <= 0 {
		delete(p.own, kind)
		return nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.c.Timeout)
	defer cancel()
	return p.notify(ctx, conn, kind, left)
}

// notify sends the line of kind, left on the channel.
func (p *peer) notify(ctx context.Context, conn *pgx.Conn, kind string, left time.Duration) error {
	_, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", p.c.channel, peersig.Line(p.id, kind, left))
	return err
}

// receive reads a line from the channel: another Guard's hello, or its
// signal, applied to this Guard (peersig.Apply); its own are ignored.
func (p *peer) receive(line string) {
	origin, kind, _, ok := peersig.Parse(line)
	switch {
	case !ok || origin == p.id:
	case kind == hello:
		p.hello = true
	default:
		peersig.Apply(p.g, line, p.id, mechanism, p.c.Name)
	}
}

// lost logs the session's loss, or a dial's failure, once a run of them.
func (p *peer) lost(err error) {
	if p.down || err == nil {
		return
	}
	p.down = true
	p.c.Logger.Warn("dbbudget: the session of the signals is lost: signals are not shared meanwhile",
		slog.String("name", p.c.Name), slog.String("error", p.c.secrets.Redact(err).Error()))
}

// back logs the session's return after a loss.
func (p *peer) back() {
	if !p.down {
		return
	}
	p.down = false
	p.c.Logger.Info("dbbudget: the session of the signals is back", slog.String("name", p.c.Name))
}
