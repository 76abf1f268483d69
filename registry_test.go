package respool

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/respool/respool/pool"
)

// registryName returns a pool name no other test uses.
func registryName(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), mockSeq.Add(1))
}

func TestLookupThroughSQLOpen(t *testing.T) {
	m := newMock(t)
	m.expectInt("SELECT 1", 1)
	m.mock.ExpectClose() // by db.Close: the pool closes its connection
	name := registryName(t)
	db, err := sql.Open(DriverName, m.dsn+"?respool_driver=sqlmock&respool_max_conns=1&respool_name="+name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := queryInt(context.Background(), db, "SELECT 1"); err != nil {
		t.Fatal(err)
	}

	c := Lookup(name)
	if c == nil {
		t.Fatalf("Lookup(%q) = nil after sql.Open", name)
	}
	if c.Name() != name {
		t.Errorf("Name() = %q, want %q", c.Name(), name)
	}
	if !slices.Contains(Connectors(), c) {
		t.Errorf("Connectors() does not list the Connector Lookup found")
	}
	s := c.Stats()
	if s.Creates != 1 || s.Total != 1 || s.MaxObjects != 1 || s.Takes < 1 {
		t.Errorf("Lookup(%q).Stats() = %+v; want the pool of the query: 1 created, 1 alive, max 1, ≥ 1 take", name, s)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := Lookup(name); got != nil {
		t.Errorf("Lookup(%q) after db.Close = %p, want nil", name, got)
	}
	if slices.Contains(Connectors(), c) {
		t.Errorf("Connectors() lists a closed Connector")
	}
	if err := c.Pool().Close(context.Background()); err != nil { // db.Close does not wait for the connection's close
		t.Fatal(err)
	}
	m.met(t)
}

func TestLookupSharedNameFindsTheOldest(t *testing.T) {
	name := registryName(t)
	open := func() *Connector {
		c, err := NewConnector(Config{DriverName: dsnTestDriverName, Pool: pool.Config{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first, second, third := open(), open(), open()
	all := Connectors()
	i1, i2, i3 := slices.Index(all, first), slices.Index(all, second), slices.Index(all, third)
	if i1 < 0 || i2 < 0 || i3 < 0 || !(i1 < i2 && i2 < i3) {
		t.Errorf("Connectors() positions %d %d %d: want all three, oldest first", i1, i2, i3)
	}
	for _, step := range []struct {
		close, want *Connector
	}{
		{nil, first},
		{second, first}, // closing another changes nothing
		{first, third},
		{third, nil},
	} {
		if step.close != nil {
			if err := step.close.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got := Lookup(name); got != step.want {
			t.Errorf("Lookup(%q) = %p, want %p", name, got, step.want)
		}
	}
	if err := first.Close(); err != nil { // twice: still gone, no panic
		t.Fatal(err)
	}
	if Lookup(name) != nil {
		t.Error("a Connector closed twice came back")
	}
}

func TestLookupDefaultName(t *testing.T) {
	c, err := NewConnector(Config{DriverName: dsnTestDriverName})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := "respool(" + dsnTestDriverName + ")"
	if c.Name() != want {
		t.Errorf("Name() = %q, want %q", c.Name(), want)
	}
	if !slices.Contains(Connectors(), c) || Lookup(want) == nil {
		t.Errorf("an unnamed Connector is not found under %q", want)
	}
	if Lookup("no such pool") != nil {
		t.Error("Lookup of an unknown name is not nil")
	}
}

func TestRegistryHoldsNoPassword(t *testing.T) {
	name := registryName(t)
	db, err := sql.Open(DriverName, "postgres://u:"+pwMark+"@127.0.0.1:1/db?respool_name="+name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := Lookup(name)
	if c == nil {
		t.Fatalf("Lookup(%q) = nil", name)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Pool().Close(context.Background()); err != nil { // the pool's goroutines, which fmt would race with, have ended
		t.Fatal(err)
	}
	for _, s := range []string{c.Name(), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c.Pool()), fmt.Sprintf("%+v", c.Stats())} {
		if hasMark(s) {
			t.Errorf("the Connector found by Lookup shows the password: %s", s)
		}
	}
}

func TestRegistryConcurrent(t *testing.T) {
	name := registryName(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				c, err := NewConnector(Config{DriverName: dsnTestDriverName, Pool: pool.Config{Name: name}})
				if err != nil {
					t.Error(err)
					return
				}
				_ = Lookup(name)
				_ = Connectors()
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if c := Lookup(name); c != nil {
		t.Errorf("Lookup(%q) = %p after every Connector closed", name, c)
	}
}
