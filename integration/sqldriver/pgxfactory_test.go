package sqldriver

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/factory/pgxfactory"
	"github.com/respool/respool/leak"
	"github.com/respool/respool/pool"
)

//go:noinline
func takeAndLoseConn(t *testing.T, p *pool.Pool[*pgx.Conn]) {
	h, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := h.Value().QueryRow(context.Background(), "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

func TestNativePgxConnectionsWithLeakDetection(t *testing.T) {
	ctx := ctxT(t)
	f, err := pgxfactory.New(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	h := newSignalHandler(leak.MsgLeak)
	p, err := pool.New[*pgx.Conn](f, pool.Config{MaxObjects: 1, Leak: leak.Config{CaptureStack: true}, Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(cctx); err != nil {
			t.Error(err)
		}
	}()

	// A connection left inside a transaction is not handed out again.
	c, err := p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Value().Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := p.GiveBack(c); err != nil {
		t.Fatal(err)
	}
	c, err = p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Value().PgConn().TxStatus(); st != 'I' {
		t.Fatalf("got a connection in transaction status %q", st)
	}
	if err := p.GiveBack(c); err != nil {
		t.Fatal(err)
	}

	// A lost handle is found by the garbage collector and its slot freed.
	takeAndLoseConn(t, p)
	for p.Stats().LeaksDetected == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the lost connection was never reported")
		default:
		}
		runtime.GC()
		runtime.Gosched()
	}
	<-h.seen
	c, err = p.Take(ctx) // MaxObjects 1: only possible once the slot is freed
	if err != nil {
		t.Fatalf("Take after the leak: %v", err)
	}
	if err := p.GiveBack(c); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Destroyed(pool.DestroyInvalid) != 1 || st.Destroyed(pool.DestroyLeaked) != 1 {
		t.Fatalf("destroys %v: want one for the open transaction, one for the leak", st.Destroys)
	}
}
