package respool

import (
	"errors"
	"testing"

	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// A Group member's Reset closes its idle connection at once and the one in
// use when database/sql gives it back; its Resize forwards to its pool,
// and a bad value is an ErrInvalidConfig naming it.
func TestConnectorResetAndResize(t *testing.T) {
	m := newMock(t)
	fc := &faultConnector{m: m}
	g := newTestGroup(t, GroupConfig{MaxConns: 4})
	db, c := member(t, g, "primary", fc)
	inUse, idle := sqlConn(t, db), sqlConn(t, db)
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	s := waitStats(t, c, func(s pool.Stats) bool { return s.Destroys.Reset == 1 })
	if s.Destroys.Reset != 1 || !fc.conn(t, 2).closed.Load() || fc.conn(t, 1).closed.Load() {
		t.Fatalf("after Reset: %d closed as reset, idle one closed %v, one in use closed %v; want 1, true, false",
			s.Destroys.Reset, fc.conn(t, 2).closed.Load(), fc.conn(t, 1).closed.Load())
	}
	if err := inUse.Close(); err != nil {
		t.Fatal(err)
	}
	s = waitStats(t, c, func(s pool.Stats) bool { return s.Destroys.Reset == 2 })
	if s.Destroys.Reset != 2 || !fc.conn(t, 1).closed.Load() {
		t.Fatalf("after the give-back: %d closed as reset, closed %v; want 2, true", s.Destroys.Reset, fc.conn(t, 1).closed.Load())
	}

	if err := c.Resize(2, 0); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.MaxObjects != 2 {
		t.Fatalf("MaxObjects %d after Resize(2, 0), want 2", s.MaxObjects)
	}
	if src := health.FromConnector(c, nil); src.Reset == nil || src.Resize == nil {
		t.Fatal("health.FromConnector offers no Reset or Resize for a *Connector")
	}
	err := c.Resize(5, 0)
	var ce *resilience.ConfigError
	if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != "MaxObjects" || ce.Value != 5 {
		t.Fatalf("Resize(5, 0) of a member of 4 = %v; want ErrInvalidConfig naming MaxObjects 5", err)
	}
}
