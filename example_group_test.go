package respool_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	"github.com/respool/respool"
)

// A primary and its replica share one budget of 20 connections: the
// replica may use 15 of them at most, and whichever needs more than it has
// takes the slots of the other's idle connections.
func ExampleNewGroup() {
	g, err := respool.NewGroup(respool.GroupConfig{MaxConns: 20, Name: "shop"})
	if err != nil {
		log.Fatal(err)
	}
	rwCfg, err := respool.ParseDSN("postgres://app:s3cret@primary.example.com/app")
	if err != nil {
		log.Fatal(err)
	}
	roCfg, err := respool.ParseDSN("postgres://app:s3cret@replica.example.com/app?respool_max_conns=15")
	if err != nil {
		log.Fatal(err)
	}
	rw, err := g.Connector("primary", *rwCfg)
	if err != nil {
		log.Fatal(err)
	}
	ro, err := g.Connector("replica", *roCfg)
	if err != nil {
		log.Fatal(err)
	}
	primary, replica := sql.OpenDB(rw), sql.OpenDB(ro)
	defer primary.Close()
	defer replica.Close()
	// primary.ExecContext(ctx, "UPDATE …"), replica.QueryContext(ctx, "SELECT …"):
	// at most 20 connections to both servers together.

	s := g.Stats()
	fmt.Println("budget:", s.MaxObjects, "open:", s.Total)
	for _, c := range []*respool.Connector{rw, ro} {
		fmt.Println(c.Name(), "at most", c.Stats().MaxObjects)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Close(ctx); err != nil { // every member, and waits for their connections
		log.Fatal(err)
	}
	// Output:
	// budget: 20 open: 0
	// shop[primary] at most 20
	// shop[replica] at most 15
}
