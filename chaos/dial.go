package chaos

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"
)

// chaos dials for pgx and go-sql-driver/mysql, so that the driver itself
// turns a network fault into the error it returns for the real thing.
// Connect puts a dialAttempt in the context, and the dial function, called
// with a context derived from it, finds it there. With a connect Fault, it
// returns a dial error instead of dialing (KindRefuse), or a connection to a
// stand-in server that never answers (KindFreeze) or refuses the session with
// the Fault's error (KindError); every dial of the attempt (pgx may dial twice
// for sslmode=prefer, and once per host) meets the same Fault. Without one,
// it dials and wraps the connection in a netConn, which a frozen statement
// stops. Dials without a dialAttempt (pgx's cancel requests) dial as they
// would without chaos.
type dialAttemptKey struct{}

// dialAttempt is one Connect's business with the dial function.
type dialAttempt struct {
	fault *fault   // the connect Fault that hit, or nil
	conn  *netConn // the last connection dialed: the one the driver keeps
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// pgxConnector returns pgx's database/sql connector for dsn, as
// sql.Open("pgx", dsn) makes it, dialing through hook.
func pgxConnector(dsn string, hook func(dialFunc) dialFunc) (_ driver.Connector, password string, _ error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, "", err
	}
	cfg.DialFunc = hook(cfg.DialFunc)
	return stdlib.GetConnector(*cfg), cfg.Password, nil
}

// mysqlConnector returns go-sql-driver/mysql's connector for dsn, dialing
// through hook over TCP and Unix sockets (other networks may have a dial
// function registered with mysql.RegisterDialContext, which a Config's
// DialFunc would bypass; hooked is then false).
func mysqlConnector(dsn string, hook func(dialFunc) dialFunc) (_ driver.Connector, hooked bool, password string, _ error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, false, "", err
	}
	switch cfg.Net {
	case "tcp", "tcp4", "tcp6", "unix":
		if cfg.DialFunc == nil {
			var d net.Dialer
			cfg.DialFunc, hooked = hook(d.DialContext), true
		}
	}
	base, err := mysql.NewConnector(cfg)
	return base, hooked, cfg.Passwd, err
}

// dialer wraps a driver's dial function with the connect Faults.
func (c *Connector) dialer(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		a, _ := ctx.Value(dialAttemptKey{}).(*dialAttempt)
		if a == nil {
			return dial(ctx, network, addr)
		}
		f := a.fault
		if f == nil {
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			a.conn = newNetConn(nc)
			return a.conn.outer(), nil
		}
		switch f.Kind {
		case KindRefuse:
			return nil, refusedError(network, addr)
		case KindFreeze:
			return c.standIn(drain), nil
		}
		err := f.err() // KindError
		serve := refusal(err)
		if serve == nil {
			return nil, err // not a server's error: the dial fails with it
		}
		return c.standIn(serve), nil
	}
}

// standIn returns the client's end of an in-memory connection whose
// server's end serve runs in a goroutine, until it returns or the client
// closes its end; Close closes the server's end.
func (c *Connector) standIn(serve func(server net.Conn)) net.Conn {
	client, server := net.Pipe()
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		_ = server.Close()
		return client // the driver reads EOF
	default:
	}
	c.pipes[server] = struct{}{}
	c.mu.Unlock()
	go func() {
		serve(server)
		c.mu.Lock()
		delete(c.pipes, server)
		c.mu.Unlock()
		_ = server.Close()
	}()
	return client
}

// drain is a server that reads and never answers.
func drain(server net.Conn) { _, _ = io.Copy(io.Discard, server) }

// refusal returns a server that refuses a session with err, or nil when
// err is not a server's error.
func refusal(err error) func(net.Conn) {
	switch e := err.(type) {
	case *pgconn.PgError:
		return func(server net.Conn) { pgRefuse(server, e) }
	case *mysql.MySQLError:
		return func(server net.Conn) { mysqlRefuse(server, e) }
	}
	return nil
}

// pgRefuse answers PostgreSQL's startup as a server that refuses the
// session: 'N' to requests for encryption, then e as an ErrorResponse.
func pgRefuse(server net.Conn, e *pgconn.PgError) {
	be := pgproto3.NewBackend(server, server)
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := server.Write([]byte{'N'}); err != nil {
				return
			}
		case *pgproto3.StartupMessage:
			be.Send(&pgproto3.ErrorResponse{Severity: e.Severity, SeverityUnlocalized: e.SeverityUnlocalized,
				Code: e.Code, Message: e.Message, Detail: e.Detail, Hint: e.Hint})
			_ = be.Flush()
			return
		default: // a cancel request
			return
		}
	}
}

// mysqlRefuse sends e as an error packet in place of the server's
// handshake. MariaDB sends its SQLSTATE even with 1040 (too many
// connections), as integration/chaos checks.
func mysqlRefuse(server net.Conn, e *mysql.MySQLError) {
	payload := []byte{0xff}
	payload = binary.LittleEndian.AppendUint16(payload, e.Number)
	if e.SQLState != ([5]byte{}) {
		payload = append(append(payload, '#'), e.SQLState[:]...)
	}
	payload = append(payload, e.Message...)
	header := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), 0}
	_, _ = server.Write(append(header, payload...))
}

// netConn is a connection chaos dialed for a driver. While frozen, the
// network drops every byte: writes vanish and what the server sends is
// never read, so the driver waits for an answer until its context ends, and
// fails as it fails on a real frozen network.
type netConn struct {
	net.Conn
	frozen atomic.Bool
}

func newNetConn(c net.Conn) *netConn { return &netConn{Conn: c} }

// outer returns c as the driver should see it: with the SyscallConn of the
// dialed connection, when it has one, which go-sql-driver/mysql uses to
// check a connection's liveness before reusing it.
func (c *netConn) outer() net.Conn {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sysNetConn{c, sc}
	}
	return c
}

func (c *netConn) Write(p []byte) (int, error) {
	if c.frozen.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *netConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err != nil || !c.frozen.Load() {
			return n, err
		}
	}
}

type sysNetConn struct {
	*netConn
	sc syscall.Conn
}

func (c sysNetConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }
