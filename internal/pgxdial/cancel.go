package pgxdial

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNoSessionToCancel is the dial of a cancel request refused by
// StartedCancelsOnly; pgconn drops it (asyncClose ignores CancelRequest's
// error).
var ErrNoSessionToCancel = errors.New("respool: no cancel request: the connection never finished its startup")

// StartedCancelsOnly gives cc, the config of one connection attempt, a dial
// function that refuses, without touching the network, any dial whose
// context is not the attempt's own (attempt reports false) until the
// connection finished its startup (pgconn ran cc's AfterConnect).
//
// pgconn closes a connection whose read fails with asyncClose, which sends
// a cancel request first: during a startup that fails (a server that closes
// or refuses after accepting, one going down) that is a second connection
// to the server per attempt, with no session key to cancel and no statement
// running. The attempt's own dials (its hosts, its TLS fallback) carry the
// context given to connect; pgconn dials cancel requests with a context of
// their own.
func StartedCancelsOnly(cc *pgx.ConnConfig, attempt func(context.Context) bool) {
	var started atomic.Bool
	dial, afterConnect := cc.DialFunc, cc.AfterConnect
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !started.Load() && !attempt(ctx) {
			return nil, ErrNoSessionToCancel
		}
		return dial(ctx, network, addr)
	}
	cc.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		started.Store(true)
		if afterConnect != nil {
			return afterConnect(ctx, c)
		}
		return nil
	}
}
