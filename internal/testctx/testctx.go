package testctx

import (
	"context"
	"testing"
	"time"
)

// Bound is how long a test waits for something that should happen at once.
const Bound = 10 * time.Second

// New returns a context that ends after Bound or when t ends.
func New(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	t.Cleanup(cancel)
	return ctx
}
