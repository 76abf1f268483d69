package dsnform

import (
	"errors"
	"strings"
)

// The postgres URL form, read as libpq and pgx read it:
//
//	postgres[ql]://[user[:password]@]host[:port][,host[:port]...][/dbname][?key=value&...]
//
// The user information ends at the first '@' before any '/'; a host in
// brackets (IPv6) may hold any byte but ']'; the query starts at the first
// '?' after the hosts.

// urlPrefixLen returns the length of the scheme of the postgres URL s.
func urlPrefixLen(s string) int {
	if strings.HasPrefix(s, "postgresql://") {
		return len("postgresql://")
	}
	return len("postgres://")
}

// urlUserEnd returns the index of the '@' that ends the user information of
// the postgres URL s, or -1: like libpq, the first '@' before any '/'.
func urlUserEnd(s string) int {
	pl := urlPrefixLen(s)
	if i := strings.IndexAny(s[pl:], "@/"); i >= 0 && s[pl+i] == '@' {
		return pl + i
	}
	return -1
}

// urlHosts is what follows the user information of a postgres URL.
type urlHosts struct {
	query int // index of the '?' that starts the query, or -1
	// at is true when the hosts, ports or path hold an '@' (none of them
	// can: it is an '@' of a password or user that ends elsewhere).
	at bool
	// badPort is true when a port is not a number: empty after a ':', or
	// holding other bytes (a piece of a password, maybe).
	badPort bool
}

// Errors of a postgres URL whose hosts cannot be read.
var (
	errURLBracket      = errors.New(`URL form: a host opens "[" and does not close it`)
	errURLAfterBracket = errors.New(`URL form: unexpected byte after "]" in a host (want ":", "/", "?", "," or the end)`)
)

// urlReadHosts reads the postgres URL s from index i, where its hosts
// start (see the form above).
func urlReadHosts(s string, i int) (urlHosts, error) {
	start := i
	h := urlHosts{query: -1}
	for {
		if i < len(s) && s[i] == '[' {
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return urlHosts{query: -1}, errURLBracket
			}
			i += end + 1
			if i < len(s) && !strings.ContainsRune(":/?,", rune(s[i])) {
				return urlHosts{query: -1}, errURLAfterBracket
			}
		} else {
			i = indexFrom(s, i, ":/?,")
		}
		if i < len(s) && s[i] == ':' {
			port := i + 1
			i = indexFrom(s, port, "/?,")
			h.badPort = h.badPort || port == i || strings.Trim(s[port:i], "0123456789") != ""
		}
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		break
	}
	switch {
	case i < len(s) && s[i] == '/':
		if j := strings.IndexByte(s[i:], '?'); j >= 0 {
			h.query = i + j
		}
	case i < len(s) && s[i] == '?':
		h.query = i
	}
	end := len(s)
	if h.query >= 0 {
		end = h.query
	}
	h.at = strings.IndexByte(s[start:end], '@') >= 0
	return h, nil
}

// indexFrom returns the index of the first byte of s[i:] in chars, or
// len(s).
func indexFrom(s string, i int, chars string) int {
	if j := strings.IndexAny(s[i:], chars); j >= 0 {
		return i + j
	}
	return len(s)
}

// indexAfter returns the index of the first c in s[i:], or -1.
func indexAfter(s string, i int, c byte) int {
	if j := strings.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return -1
}

// urlDecodes reports whether pgx's decoder takes the URL component raw: a
// '%' starts two hex digits and not %00, and spaces are only leading or
// trailing.
func urlDecodes(raw string) bool {
	t := strings.Trim(raw, " ")
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case ' ':
			return false
		case '%':
			if i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2]) || t[i+1] == '0' && t[i+2] == '0' {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}
