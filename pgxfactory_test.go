package respool

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPgxFactoryCreateHonoursItsContext(t *testing.T) {
	cc, err := pgx.ParseConfig("postgres://app@127.0.0.1:1/app?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	f := PgxFactory(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c, err := f.Create(ctx); err == nil {
		c.Close(ctx)
		t.Fatal("Create connected to a closed port")
	}
}
