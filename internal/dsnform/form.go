package dsnform

import "strings"

// Form is the syntax of a DSN.
type Form uint8

const (
	URL   Form = iota + 1 // postgres:// or postgresql:// URL (pgx)
	KV                    // libpq keyword/value (pgx)
	MySQL                 // go-sql-driver/mysql, or any DSN with a ?query
)

// Driver is the database/sql driver a DSN of form f is for by default.
func (f Form) Driver() string {
	if f == MySQL {
		return "mysql"
	}
	return "pgx"
}

// Spaces are the bytes libpq and pgx take as whitespace.
const Spaces = " \t\n\v\f\r"

// IsSpace reports the bytes libpq and pgx take as whitespace.
func IsSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

// skipSpaces returns the index of the first byte of s[i:] that is not a
// space, or len(s).
func skipSpaces(s string, i int) int {
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	return i
}

// IsKeywordByte reports the bytes of a libpq keyword.
func IsKeywordByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '_' || b == '.' || b == '-'
}

// hasURLPrefix reports whether s starts as a postgres URL.
func hasURLPrefix(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Of tells the form of s: a postgres URL; keyword/value when s is blank or
// starts with a keyword and '='; the mysql form otherwise.
func Of(s string) Form {
	if hasURLPrefix(s) {
		return URL
	}
	i := skipSpaces(s, 0)
	if i == len(s) {
		return KV
	}
	j := i
	for j < len(s) && IsKeywordByte(s[j]) {
		j++
	}
	if j == i {
		return MySQL
	}
	if j = skipSpaces(s, j); j < len(s) && s[j] == '=' {
		return KV
	}
	return MySQL
}

// HasPrefixFold reports whether k starts with prefix, ignoring case.
func HasPrefixFold(k, prefix string) bool {
	return len(k) >= len(prefix) && strings.EqualFold(k[:len(prefix)], prefix)
}

// MySQLQuery returns the index of the '?' that starts the query of a
// mysql-form DSN, or -1: the first '?' after the last '/', or the first '?'
// when there is no '/'.
func MySQLQuery(s string) int {
	if slash := strings.LastIndexByte(s, '/'); slash >= 0 {
		if q := strings.IndexByte(s[slash+1:], '?'); q >= 0 {
			return slash + 1 + q
		}
		return -1
	}
	return strings.IndexByte(s, '?')
}
