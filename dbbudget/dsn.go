package dbbudget

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/pool"
)

// Importing the package lets respool_budget (respool.Config.SharedBudget)
// name a budget held in the database itself, reached with the pools' own
// DSN:
//
//	respool_budget=db?name=orders-db&max=200[&timeout=100ms]
//
// name and max are required (Config.Name and Max), timeout optional.
// Opening it dials the coordinating session (bounded by 10s).
func init() { respool.RegisterBudget("db", openSpec) }

// openSpec opens the Budget spec names for the database dsn reaches.
func openSpec(spec, dsn string) (pool.Budget, error) {
	_, query, _ := strings.Cut(spec, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("dbbudget: %q: not a query: %w", spec, err)
	}
	cfg := Config{DSN: dsn, Name: q.Get("name")}
	for key := range q {
		switch key {
		case "name":
		case "max":
			if cfg.Max, err = strconv.Atoi(q.Get(key)); err != nil || cfg.Max < 1 {
				return nil, fmt.Errorf("dbbudget: max=%q: want an integer ≥ 1", q.Get(key))
			}
		case "timeout":
			if cfg.Timeout, err = time.ParseDuration(q.Get(key)); err != nil {
				return nil, fmt.Errorf("dbbudget: timeout=%q: want a duration such as 100ms", q.Get(key))
			}
		default:
			return nil, fmt.Errorf("dbbudget: %s: unknown parameter; accepted: name, max, timeout", key)
		}
	}
	if cfg.Name == "" || cfg.Max == 0 {
		return nil, fmt.Errorf("dbbudget: name and max are required, as in db?name=orders-db&max=200")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return New(ctx, cfg)
}
