package redisbudget

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/peersig"
	"github.com/respool/respool/resilience"
)

// A signal is what a Guard tells the others: its creations paused, or its
// circuit open, for a while. On the channel it is one line,
// "v1 ORIGIN KIND MILLISECONDS" (peersig).

// peer is one Guard joined to the others of its Name (Share): it sends its
// Guard's pauses and openings, and pauses its Guard's creations on theirs.
type peer struct {
	c       ShareConfig
	channel string
	id      string // this Guard: the signals it sends name it, and it ignores them
	g       *dbguard.Guard
	health  health

	ps   *redis.PubSub
	out  chan signal   // signals to send; full: dropped (the next will say as much)
	stop chan struct{} // closed by leave
	wg   sync.WaitGroup

	sent peersig.Sent // by kind: when the last signal sent said it ends
}

// remote is the reason of a pause a signal set: a pause whose reason is
// one is not sent on.
type remote = peersig.Remote

// join joins g to the Guards of cfg.Name: it subscribes to their channel
// and starts the goroutines that send and receive; leave stops them.
func join(g *dbguard.Guard, cfg ShareConfig) (tell resilience.Listener, leave func()) {
	p := newPeer(g, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	p.ps = cfg.Client.Subscribe(ctx, p.channel) // while Redis is down, its Channel subscribes when it comes back
	cancel()
	msgs := p.ps.ChannelWithSubscriptions()
	p.wg.Add(2)
	go p.send()
	go p.receive(msgs)
	return p.tell, p.leave
}

// newPeer returns g's peer, not yet subscribed nor sending.
func newPeer(g *dbguard.Guard, cfg ShareConfig) *peer {
	return &peer{c: cfg, channel: "respool:signal:" + cfg.Name, id: peersig.ProcessID(), g: g,
		health: health{name: cfg.Name, what: "signals are not shared meanwhile", logger: cfg.Logger},
		out:    make(chan signal, 8), stop: make(chan struct{})}
}

// tell sends e's news, when it is a pause or an opening of this Guard's
// own: never one a signal caused, nor a circuit opened for credentials
// (its Err says so: see dbguard's refusedCredentials). It does not block.
func (p *peer) tell(e resilience.Event) {
	kind, d, ok := peersig.Of(e)
	if !ok || !p.sent.Due(kind, e.Time.Add(d)) {
		return
	}
	select {
	case p.out <- signal{kind: kind, d: d, told: time.Now()}:
	default:
	}
}

// signal is a signal to send: kind, for d from told (on this process's
// clock: the signal says how long is left when it is sent).
type signal struct {
	kind string
	d    time.Duration
	told time.Time
}

// publishTimeout bounds a publication at least: no caller waits for it.
const publishTimeout = time.Second

// send publishes the signals told, one call at a time, until leave. A
// signal Redis did not take is sent again (after 50ms, then twice as long
// each time, up to a second) until what it says is over.
func (p *peer) send() {
	defer p.wg.Done()
	for {
		select {
		case <-p.stop:
			return
		case s := <-p.out:
			for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
				left := s.d - time.Since(s.told)
				if left <= 0 || p.publish(s.kind, left) {
					break
				}
				t := time.NewTimer(wait)
				select {
				case <-p.stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
	}
}

// publishScript publishes the signal "v1 ARGV[2] ARGV[3] ARGV[4]" on the
// channel ARGV[1], and keeps it in KEYS[1] (the channel's key for kind
// ARGV[3]) for its ARGV[4] ms unless one there lasts longer, for the
// Guards that subscribe meanwhile (stateScript).
var publishScript = redis.NewScript(`
local ms = tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < ms then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ms)
end
return redis.call('PUBLISH', ARGV[1], 'v1 ' .. ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
`)

// stateScript returns the signals kept in KEYS (of the kinds ARGV, in
// order) that still hold, as they were published, with the ms left.
var stateScript = redis.NewScript(`
local out = {}
for i, k in ipairs(KEYS) do
  local origin, left = redis.call('GET', k), redis.call('PTTL', k)
  if origin and left > 0 then
    out[#out + 1] = 'v1 ' .. origin .. ' ' .. ARGV[i] .. ' ' .. left
  end
end
return out
`)

// stateKey is where the signal of kind that lasts longest is kept.
func (p *peer) stateKey(kind string) string { return p.channel + ":" + kind }

// publish sends one signal: kind, for left from now; true when Redis took it.
func (p *peer) publish(kind string, left time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), max(p.c.Timeout, publishTimeout))
	defer cancel()
	ms := max(left.Milliseconds(), 1)
	if err := publishScript.Run(ctx, p.c.Client, []string{p.stateKey(kind)}, p.channel, p.id, kind, ms).Err(); err != nil {
		p.health.failed(err)
		return false
	}
	p.health.answered()
	return true
}

// receive applies the signals of the other Guards until leave: their
// pause, or their open circuit, pauses this Guard's creations as long.
// Each time the subscription is made (again, after Redis came back), it
// applies first the signals that still hold, sent meanwhile.
func (p *peer) receive(msgs <-chan any) {
	defer p.wg.Done()
	for {
		select {
		case <-p.stop:
			return
		case m, ok := <-msgs:
			switch m := m.(type) {
			case nil:
				if !ok {
					return
				}
			case *redis.Subscription:
				p.catchUp()
			case *redis.Message:
				p.apply(m.Payload)
			}
		}
	}
}

// catchUp applies the signals kept in Redis that still hold.
func (p *peer) catchUp() {
	keys := make([]string, len(peersig.Kinds))
	args := make([]any, len(peersig.Kinds))
	for i, k := range peersig.Kinds {
		keys[i], args[i] = p.stateKey(k), k
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(p.c.Timeout, publishTimeout))
	defer cancel()
	held, err := stateScript.Run(ctx, p.c.Client, keys, args...).StringSlice()
	if err != nil {
		p.health.failed(err)
		return
	}
	p.health.answered()
	for _, line := range held {
		p.apply(line)
	}
}

// apply applies one signal; it ignores this Guard's own, those it cannot
// read, and all of them when the Guard's pause is off.
func (p *peer) apply(payload string) { peersig.Apply(p.g, payload, p.id, "redisbudget", p.c.Name) }

// leave stops the goroutines and closes the subscription.
func (p *peer) leave() {
	close(p.stop)
	_ = p.ps.Close()
	p.wg.Wait()
}
