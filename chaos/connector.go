package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/internal/resil"
)

// Connector is a driver.Connector whose connections come from the wrapped
// driver with faults injected. Use it with sql.OpenDB, or as the Connector
// of respool.Config; sql.Open("chaos", dsn) makes one.
type Connector struct {
	base     driver.Connector
	ownBase  bool   // base was made here: Close closes it
	flavor   flavor // whose errors to imitate
	dialHook bool   // connect faults reach the driver through its dial function
	name     string
	seed     uint64
	clock    clock.Clock
	start    time.Time
	faults   []*fault
	onFault  func(Event)
	secrets  dsnform.Secrets // of the wrapped DSN and the passwords its driver read, kept out of errors

	closed    chan struct{} // closed by Close: frozen calls end
	closeOnce sync.Once
	mu        sync.Mutex
	pipes     map[net.Conn]struct{} // stand-in servers' ends, closed by Close; guarded by mu
	frozen    map[*netConn]struct{} // connections of frozen calls, closed by Close; guarded by mu
}

var (
	_ driver.Connector = (*Connector)(nil)
	_ io.Closer        = (*Connector)(nil)
)

// NewConnector validates cfg and returns its Connector; the time windows of
// its Faults start now. With a Name, Lookup finds it until it is closed. A
// DSN whose password its form cannot carry as written (see ParseDSN) is
// refused with an error matching ErrInvalidConfig.
func NewConnector(cfg Config) (*Connector, error) { return newConnector(cfg, nil) }

// newConnector is NewConnector with cfg.DSN as read already by ParseDSN
// (text; nil: it is read here).
func newConnector(cfg Config, text *dsnform.Text) (*Connector, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	faults, _ := cfg.faults()
	c := &Connector{
		name:    cfg.Name,
		seed:    cfg.Seed,
		clock:   resil.ClockOr(cfg.Clock),
		onFault: cfg.OnFault,
		closed:  make(chan struct{}),
		pipes:   make(map[net.Conn]struct{}),
		frozen:  make(map[*netConn]struct{}),
	}
	for c.seed == 0 {
		c.seed = rand.Uint64()
	}
	for _, f := range faults {
		c.faults = append(c.faults, newFault(f))
	}
	if cfg.Connector != nil {
		c.base, c.flavor = cfg.Connector, flavorOf(cfg.Connector.Driver())
	} else if err := c.openBase(cfg.DriverName, cfg.DSN, text); err != nil {
		return nil, err
	}
	c.start = c.clock.Now()
	if c.name != "" {
		register(c)
	}
	return c, nil
}

// Connect makes a connection of the wrapped driver, unless a Fault on
// OpConnect hits: KindLatency delays it, KindError, KindRefuse and
// KindFreeze fail it as the driver fails a connection attempt.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	select {
	case <-c.closed:
		return nil, ErrClosed
	default:
	}
	p := c.plan(OpConnect)
	c.sleep(ctx, p.delay)
	var attempt *dialAttempt
	if c.dialHook {
		attempt = &dialAttempt{fault: p.fail}
		ctx = context.WithValue(ctx, dialAttemptKey{}, attempt)
	} else if p.fail != nil {
		return nil, c.connectFault(ctx, p.fail)
	}
	rc, err := c.base.Connect(ctx)
	if err != nil {
		return nil, c.secrets.Redact(err)
	}
	cn := &conn{c: c, real: rc}
	if attempt != nil {
		cn.net = attempt.conn
	}
	return cn, nil
}

// connectFault is a connect Fault for a driver whose dialing chaos cannot
// reach: the error is returned as it is.
func (c *Connector) connectFault(ctx context.Context, f *fault) error {
	switch f.Kind {
	case KindError:
		return f.err()
	case KindRefuse:
		return refusedError("tcp", "")
	default: // KindFreeze
		return c.freeze(ctx)
	}
}

// Driver returns chaos's database/sql driver, the one registered as "chaos".
func (c *Connector) Driver() driver.Driver { return chaosDriver{} }

// Format prints c, for every verb of package fmt, as its type and name
// (*chaos.Connector("orders")): not its fields, which change while it is in
// use and include the wrapped driver's configuration, password and all.
func (c *Connector) Format(f fmt.State, _ rune) { _, _ = fmt.Fprintf(f, "%T(%q)", c, c.name) }

// Enable switches the named Fault on; it then hits calls as configured.
func (c *Connector) Enable(name string) error { return c.set(name, true) }

// Disable switches the named Fault off: it considers no call until Enable.
func (c *Connector) Disable(name string) error { return c.set(name, false) }

func (c *Connector) set(name string, on bool) error {
	for _, f := range c.faults {
		if f.Name == name {
			f.on.Store(on)
			return nil
		}
	}
	return fmt.Errorf("%w %s", ErrUnknownFault, dsnform.Quote(name))
}

// Stats returns the seed and the counters of every Fault.
func (c *Connector) Stats() Stats {
	s := Stats{Seed: c.seed, Faults: make(map[string]FaultStats, len(c.faults))}
	for _, f := range c.faults {
		s.Faults[f.Name] = FaultStats{Name: f.Name, Kind: f.Kind, On: f.on.Load(),
			Considered: f.calls.Load(), Injected: f.injected.Load(), Latency: time.Duration(f.latency.Load())}
	}
	return s
}

// Close releases the calls that are frozen (they fail as on a connection
// closed under them), makes Connect fail with ErrClosed, removes c from
// Lookup and closes the wrapped connector if c made it and it has a Close.
// sql.DB.Close calls it. Connections already made keep working.
func (c *Connector) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		unregister(c)
		c.mu.Lock()
		for p := range c.pipes {
			_ = p.Close()
		}
		for nc := range c.frozen {
			_ = nc.Close()
		}
		c.mu.Unlock()
		if cl, ok := c.base.(io.Closer); ok && c.ownBase {
			err = cl.Close()
		}
	})
	return err
}

// plan is what the Faults do to one call.
type plan struct {
	delay time.Duration // the KindLatency delays that hit
	fail  *fault        // the first other Fault that hit, or nil
}

// plan lets every Fault consider a call of op.
func (c *Connector) plan(op Op) plan {
	var p plan
	if len(c.faults) == 0 {
		return p
	}
	elapsed := c.clock.Since(c.start)
	for _, f := range c.faults {
		n, hit := f.consider(op, elapsed, c.seed)
		if !hit || f.Kind != KindLatency && p.fail != nil {
			continue
		}
		f.injected.Add(1)
		ev := Event{Fault: f.Name, Kind: f.Kind, Op: op, N: n}
		if f.Kind == KindLatency {
			ev.Delay = f.delay(c.seed, n)
			f.latency.Add(int64(ev.Delay))
			p.delay += ev.Delay
		} else {
			p.fail = f
		}
		if c.onFault != nil {
			c.onFault(ev)
		}
	}
	return p
}

// sleep waits d on the Connector's clock, or until ctx ends or the
// Connector is closed.
func (c *Connector) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	case <-c.closed:
	}
}

// freezeNet stops the network under nc until the returned function is
// called; Close closes nc meanwhile.
func (c *Connector) freezeNet(nc *netConn) (thaw func()) {
	nc.frozen.Store(true)
	c.mu.Lock()
	select {
	case <-c.closed:
		_ = nc.Close()
	default:
		c.frozen[nc] = struct{}{}
	}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.frozen, nc)
		c.mu.Unlock()
		nc.frozen.Store(false)
	}
}

// freeze blocks until ctx ends, and returns its error, or until the
// Connector is closed.
func (c *Connector) freeze(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return lostError(c.flavor)
	}
}

// openBase makes the wrapped driver's connector for name and dsn. For pgx
// and go-sql-driver/mysql it is made from the driver's own configuration
// with a dial function of chaos's (see dialer); for any other driver as
// database/sql makes it. Its errors, and those of its connections, are
// redacted of the secrets of dsn (text when ParseDSN read it: see
// dsnform.Read) and of the password the driver's own parser read.
func (c *Connector) openBase(name, dsn string, text *dsnform.Text) error {
	if text == nil || text.Rest != dsn {
		var err error
		if text, err = dsnform.Read(dsn, keyPrefix); err != nil {
			return fmt.Errorf("%w: DSN: %w", ErrInvalidConfig, err)
		}
	}
	c.secrets, c.ownBase = text.Secrets, true
	switch name {
	case "pgx":
		c.flavor = flavorPostgres
		base, password, err := pgxConnector(dsn, c.dialer)
		c.secrets = c.secrets.With(password)
		if err != nil {
			return c.secrets.Redact(err)
		}
		c.base, c.dialHook = base, true
		return nil
	case "mysql":
		c.flavor = flavorMySQL
		base, hooked, password, err := mysqlConnector(dsn, c.dialer)
		c.secrets = c.secrets.With(password)
		if err != nil {
			return c.secrets.Redact(err)
		}
		c.base, c.dialHook = base, hooked
		return nil
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		return c.secrets.Redact(err)
	}
	d := db.Driver()
	_ = db.Close()
	c.flavor = flavorOf(d)
	if dc, ok := d.(driver.DriverContext); ok {
		if c.base, err = dc.OpenConnector(dsn); err != nil {
			return c.secrets.Redact(err)
		}
		return nil
	}
	c.base = &dsnConnector{d: d, dsn: dsn}
	return nil
}

// dsnConnector adapts a driver without DriverContext. It is used by
// pointer, so that printing a Connector shows an address, not the DSN.
type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c *dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c *dsnConnector) Driver() driver.Driver                        { return c.d }
