package dsnform

import "strings"

// Append returns dsn with pairs (key, value) added where form (see
// Placement) puts parameters: at the end of the query of a URL or
// mysql-form DSN ('?' or '&' first, values percent-encoded by EscapeQuery),
// and in front of a keyword/value DSN (values quoted by QuoteKV when
// needed), since at its end they could become the value of a last
// "keyword=" with an empty value.
func Append(dsn string, form Form, pairs [][2]string) string {
	var b strings.Builder
	if form == KV {
		writePairs(&b, pairs, ' ', QuoteKV)
		if dsn != "" {
			b.WriteByte(' ')
			b.WriteString(dsn)
		}
		return b.String()
	}
	t := tokenizeAs(dsn, form)
	q := t.query
	if form == URL && t.hostsErr != nil {
		q = -1
	}
	b.WriteString(dsn)
	switch {
	case q < 0:
		b.WriteByte('?')
	case q < len(dsn)-1:
		b.WriteByte('&')
	}
	writePairs(&b, pairs, '&', EscapeQuery)
	return b.String()
}

// writePairs writes key=value pairs separated by sep, each value encoded
// for the DSN's form.
func writePairs(b *strings.Builder, pairs [][2]string, sep byte, encode func(string) string) {
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(sep)
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(encode(p[1]))
	}
}

// Placement returns the form in which Append adds keys of the namespace
// prefix to d: d's own form when d reads back unchanged in it (no key of
// the namespace, no empty query), else keyword/value when d is made of
// keyword=value elements. A blank d gets the mysql form: keys written in
// front would take the blanks with them, as the last element goes with the
// whitespace around it.
func Placement(d, prefix string) Form {
	if d != "" && strings.Trim(d, Spaces) == "" {
		return MySQL
	}
	f := Of(d)
	if ReadsBack(d, f, prefix) {
		return f
	}
	if f != KV && ReadsBack(d, KV, prefix) {
		return KV
	}
	return f
}

// ReadsBack reports whether d, read in form f, has no key of the namespace
// prefix and splits to itself.
func ReadsBack(d string, f Form, prefix string) bool {
	t := tokenizeAs(d, f)
	if t.err() != nil {
		return false
	}
	rest, params := t.split(prefix)
	return params == nil && rest == d
}

// EscapeQuery percent-encodes every byte of v but A-Z a-z 0-9 - . _ ~, so
// that the value reads back the same in the URL and mysql forms and cannot
// contain a separator ('&', '=', '?', '/', '@', '+', space).
func EscapeQuery(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' ||
			ch == '-' || ch == '.' || ch == '_' || ch == '~' {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
	return b.String()
}
