package sharedrate

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/pause"
)

// others are the processes that should stop dialing when one meets a
// fault: a respool Connector on the suite's PostgreSQL, which has dialed
// nothing yet, and six Guards whose dials are counted.
type others struct {
	t       *testing.T
	db      interface{ PingContext(context.Context) error }
	c       *respool.Connector
	creates []func(context.Context) (int, error)
	dialed  atomic.Int64
	paused  chan resilience.Event // each one's first pause
}

func newOthers(t *testing.T, name string) *others {
	o := &others{t: t, paused: make(chan resilience.Event, 7)}
	listener := func() resilience.Listener {
		var once atomic.Bool
		return func(e resilience.Event) {
			if e.Mechanism == "pause" && e.Kind == resilience.EventPaused && once.CompareAndSwap(false, true) {
				o.paused <- e
			}
		}
	}
	cfg, err := respool.ParseDSN(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resilience.Listener = listener()
	share(t, &cfg.Resilience, name, 0)
	o.db, o.c = connector(t, cfg)
	for range 6 {
		g := guard(t, name, dbguard.Config{Listener: listener()}, 0)
		o.creates = append(o.creates, through(g, func(context.Context) (int, error) {
			o.dialed.Add(1)
			return 0, nil
		}))
	}
	return o
}

// stopWithin checks that every one of o paused its creations within 1s
// of at, then that none of them dials: the Connector's ping and each
// Guard's creation are refused at once (pause.ErrPaused) with no attempt.
func (o *others) stopWithin(at time.Time) {
	t := o.t
	t.Helper()
	for i := range 7 {
		select {
		case e := <-o.paused:
			if lag := e.Time.Sub(at); lag >= time.Second {
				t.Fatalf("a process paused %v after the fault's signal; want within 1s", lag)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 7 processes paused 5s after the fault's signal; want all within 1s", i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.db.PingContext(ctx); err == nil {
		t.Fatalf("the Connector's ping dialed during the pause: %v", err)
	}
	for _, create := range o.creates {
		if _, err := create(ctx); !errors.Is(err, pause.ErrPaused) {
			t.Fatalf("a Guard's creation during the pause: %v; want pause.ErrPaused", err)
		}
	}
	if s := o.c.ResilienceStats(); s.ConnectAttempts != 0 || o.dialed.Load() != 0 {
		t.Fatalf("%d attempts of the Connector, %d of the Guards during the pause; want none", s.ConnectAttempts, o.dialed.Load())
	}
}

// One process's server is dead (its port refuses connections): its
// circuit opens (for 5s here), and the seven others, whose server is
// well, pause their creations within 1s of the opening (measured from the
// opening's event), dialing nothing meanwhile.
func TestADeadServerStopsTheOthersDialing(t *testing.T) {
	name := shareName(t)
	opened := make(chan time.Time, 1)
	cfg, err := respool.ParseDSN(strings.Replace(pg.DSN(), pg.Addr(), servers.ClosedAddr(t), 1))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resilience.Breaker.OpenDelay = delay.Strategy{Kind: delay.Constant, Initial: 5 * time.Second}
	cfg.Resilience.Listener = func(e resilience.Event) {
		if e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange && e.To == "open" {
			select {
			case opened <- e.Time:
			default:
			}
		}
	}
	share(t, &cfg.Resilience, name, 0)
	dead, _ := connector(t, cfg)
	o := newOthers(t, name)
	awaitSubscribed(t, client(t), name, 8)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var at time.Time
	for at.IsZero() {
		ping, stop := context.WithTimeout(ctx, time.Second)
		_ = dead.PingContext(ping) // refused
		stop()
		select {
		case at = <-opened:
		case <-ctx.Done():
			t.Fatal("the dead server's circuit did not open within 20s")
		default:
		}
	}
	o.stopWithin(at)
}

// One process meets back-pressure (PostgreSQL's 53300, "too many
// connections", paused 5s here): the seven others pause their creations
// within 1s of its pause, dialing nothing meanwhile.
func TestBackPressureStopsTheOthersDialing(t *testing.T) {
	name := shareName(t)
	paused := make(chan time.Time, 1)
	full := &pgconn.PgError{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"}
	g := guard(t, name, dbguard.Config{
		Pause: pause.Config{Classify: func(err error) (time.Duration, bool) {
			_, ok := dbguard.BackPressure(err)
			return 5 * time.Second, ok
		}},
		Listener: func(e resilience.Event) {
			if e.Mechanism == "pause" && e.Kind == resilience.EventPaused {
				select {
				case paused <- e.Time:
				default:
				}
			}
		}}, 0)
	o := newOthers(t, name)
	awaitSubscribed(t, client(t), name, 8)
	if _, err := through(g, func(context.Context) (int, error) { return 0, full })(context.Background()); !errors.Is(err, full) {
		t.Fatalf("the full server's attempt: %v; want its 53300", err)
	}
	o.stopWithin(<-paused)
}

// pausedWithin waits up to bound for g's pause to hold until about until
// (within a second: the signal says what is left, in ms, when sent).
func pausedWithin(t *testing.T, g *dbguard.Guard, until time.Time, bound time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	servers.WaitFor(t, ctx, "the pause to reach the other process", func() (bool, error) {
		s := g.Pause().State()
		return s.Holding() && s.Until.Sub(until).Abs() < time.Second, nil
	})
}

// A process that starts while another's creations are paused pauses its
// own, at once, until the same time.
func TestAProcessJoiningDuringAPauseIsPaused(t *testing.T) {
	name := shareName(t)
	a := guard(t, name, dbguard.Config{}, 0)
	a.Pause().Hold(10*time.Second, errors.New("too many connections (test)"))
	until := a.Pause().State().Until
	rdb := client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	servers.WaitFor(t, ctx, "the pause sent", func() (bool, error) { // before the next process subscribes
		n, err := rdb.Exists(ctx, "respool:signal:"+name+":pause").Result()
		return n == 1, err
	})
	pausedWithin(t, guard(t, name, dbguard.Config{}, 0), until, 5*time.Second)
}

// Redis killed while a process's creations pause: once Redis is back, the
// other process pauses too (the signal, refused meanwhile, is sent again;
// the other, subscribing again, reads the pause kept in Redis), until the
// same time.
func TestAPauseDuringARedisOutageReachesTheOthersWhenItIsBack(t *testing.T) {
	name := shareName(t)
	a := guard(t, name, dbguard.Config{}, 0)
	b := guard(t, name, dbguard.Config{}, 0)
	awaitSubscribed(t, client(t), name, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rds.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rds.Start(context.Background()) }) // for the next tests, if this one fails first
	a.Pause().Hold(15*time.Second, errors.New("too many connections (test)"))
	until := a.Pause().State().Until
	if b.Pause().State().Holding() {
		t.Fatal("the other process paused while Redis was down")
	}
	if err := rds.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pausedWithin(t, b, until, 10*time.Second)
}
