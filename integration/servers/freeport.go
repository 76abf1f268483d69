package servers

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Ports below the ephemeral range, where the kernel never picks the source
// port of an outgoing connection: a server stopped by Kill or Restart gets
// its port back even while clients make thousands of connections a second.
const (
	lowestPort   = 20000
	portAttempts = 20
)

// takePort is where runPostgres and runMariaDB get their port: freePort,
// but for a test that hands them a port another server holds.
var takePort = freePort

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the ephemeral range when it can. Another process may take it before
// the server binds it; callers retry when the server exits before becoming
// ready.
func freePort() (int, error) {
	if low := ephemeralLow(); low > lowestPort {
		for range portAttempts {
			port := lowestPort + rand.IntN(low-lowestPort)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("servers: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range
// (Linux), or 0 when it is unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// isOurs returns nil when served, the data directory of the server that
// answered on the port, is data, the one we started: until the server has
// bound its port, another throwaway server (of a test package run beside
// this one, or restarted on a port we took for free) may answer there with
// the same user and password, and the caller would use it as ours (make
// test failed with "create database: database "respool" already exists").
// A server that cannot bind exits, and the caller retries on another port.
func isOurs(served, data string) error {
	want, err := filepath.Abs(data)
	if err != nil {
		return err
	}
	if filepath.Clean(served) != want {
		return fmt.Errorf("servers: the server on the port serves %s, not %s: another server has the port", served, want)
	}
	return nil
}
