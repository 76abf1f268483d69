// Package chaos holds the tests of the chaos driver against real PostgreSQL
// and MariaDB servers started by package servers: each test makes a server
// (or the network in front of it, through a servers.Proxy) fail for real,
// injects the same fault with chaos over the same server, and checks that
// the caller gets the same error: the same type along the error's chain
// and the same verdict of dbguard. Other tests run respool's
// driver over chaos over the real drivers, and check that a fault dropped
// after sending ran the statement, that a seed repeats its faults, and that
// no error shows the server's password.
package chaos
