// Package sqldriver holds the tests of respool's database/sql driver against
// real PostgreSQL and MariaDB servers started by package servers.
package sqldriver
