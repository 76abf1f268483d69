package dbguard_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// The fake servers below speak just enough of each wire protocol on a
// loopback listener to make the real drivers produce their real errors:
// pgconn's ConnectError chain for a startup refused with a SQLSTATE, the
// error of a connection lost after a statement was sent, mysql's error for
// a handshake refused with 1040. Real servers' errors are proven in the
// integration module (integration/dbclass).

// serveLoopback accepts connections on a new loopback listener and runs
// handle for each until the test ends; it returns the listener's address.
func serveLoopback(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // listener closed
			}
			wg.Go(func() {
				defer conn.Close()
				handle(conn)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// pgStartup reads a connection's startup message; it reports false for
// anything else, such as the cancel requests pgconn sends when it abandons
// a connection.
func pgStartup(conn net.Conn) (*pgproto3.Backend, bool) {
	be := pgproto3.NewBackend(conn, conn)
	msg, err := be.ReceiveStartupMessage()
	if err != nil {
		return nil, false
	}
	_, ok := msg.(*pgproto3.StartupMessage)
	return be, ok
}

// pgRefuseStartup answers a startup message with a FATAL error, as
// PostgreSQL does for 53300 or 57P03.
func pgRefuseStartup(code, message string) func(net.Conn) {
	return func(conn net.Conn) {
		be, ok := pgStartup(conn)
		if !ok {
			return
		}
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: message})
		_ = be.Flush()
	}
}

// pgSession completes the startup and hands every simple query to onQuery
// until onQuery returns false, which closes the connection. Any other
// message (Terminate, or the Parse of an extended-protocol statement)
// closes the connection at once.
func pgSession(onQuery func(be *pgproto3.Backend, sql string) (keep bool)) func(net.Conn) {
	return func(conn net.Conn) {
		be, ok := pgStartup(conn)
		if !ok {
			return
		}
		be.Send(&pgproto3.AuthenticationOk{})
		be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
		be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		if be.Flush() != nil {
			return
		}
		for {
			msg, err := be.Receive()
			if err != nil {
				return
			}
			q, ok := msg.(*pgproto3.Query)
			if !ok {
				return // Terminate
			}
			if !onQuery(be, q.String) {
				return
			}
		}
	}
}

// pgError answers a query with an ErrorResponse and ReadyForQuery, as
// PostgreSQL does for an ERROR; a FATAL closes the session after it.
func pgError(severity, code, message string) func(*pgproto3.Backend, string) bool {
	return func(be *pgproto3.Backend, _ string) bool {
		be.Send(&pgproto3.ErrorResponse{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: message})
		if severity != "FATAL" {
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		}
		return be.Flush() == nil && severity != "FATAL"
	}
}

// pgConnect connects pgconn to addr.
func pgConnect(ctx context.Context, addr string) (*pgconn.PgConn, error) {
	host, port, _ := net.SplitHostPort(addr)
	return pgconn.Connect(ctx, "postgres://respool@"+host+":"+port+"/respool?sslmode=disable&connect_timeout=10")
}

// pgMustConnect connects and closes the connection at the end of the test,
// waiting for pgconn's background cleanup.
func pgMustConnect(t *testing.T, addr string) *pgconn.PgConn {
	t.Helper()
	conn, err := pgConnect(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close(context.Background())
		<-conn.CleanupDone()
	})
	return conn
}

// mysqlRefuseHandshake sends an ERR packet in place of the server greeting,
// as MySQL and MariaDB do for 1040 too many connections: no SQLSTATE marker.
func mysqlRefuseHandshake(number uint16, message string) func(net.Conn) {
	return func(conn net.Conn) {
		payload := []byte{0xff, 0, 0}
		binary.LittleEndian.PutUint16(payload[1:], number)
		payload = append(payload, message...)
		header := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), 0}
		_, _ = conn.Write(append(header, payload...))
	}
}

// mysqlConnect connects go-sql-driver/mysql's connector to addr.
func mysqlConnect(ctx context.Context, addr string) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "respool", "secret", "tcp", addr, "respool"
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	conn, err := connector.Connect(ctx)
	if err == nil {
		conn.Close()
	}
	return err
}
