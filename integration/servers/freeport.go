package servers

import (
	"fmt"
	"net"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process may take it before the server binds it; callers retry
// when the server exits before becoming ready.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("servers: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
