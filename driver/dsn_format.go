package driver

import (
	"slices"
	"strings"

	"github.com/respool/respool/internal/dsnform"
)

// FormatDSN returns the DSN that ParseDSN reads back as c: c.DSN with the
// respool keys whose fields differ from their zero value, in the canonical
// order of the README. respool_driver is written when c.DriverName is not
// the driver that the DSN's form implies. Connector, Pool.Clock and
// Pool.Logger have no key and are left out. For a Config from ParseDSN,
// ParseDSN(c.FormatDSN()) equals c.
//
// The keys go where the DSN's form puts parameters: at the end of the query
// of a URL or mysql-form DSN ('?' or '&' first, values percent-encoded), and
// in front of a keyword/value DSN (values single-quoted when needed), since
// at its end they could become the value of a last "keyword=" with an empty
// value. An empty DSN gets the keyword/value form, a blank one the mysql
// form. A DSN whose own form would not read it back unchanged, such as the
// keyword/value element "x/y=1?" (which reads as a mysql-form DSN with an
// empty query), gets the keys in keyword/value form, with respool_driver.
func (c *Config) FormatDSN() string {
	form := dsnPlacement(c.DSN)
	var pairs [][2]string
	for i := range dsnKeys {
		k := &dsnKeys[i]
		if k.name == dsnKeyDriver {
			continue
		}
		for _, v := range k.formatAll(c) {
			pairs = append(pairs, [2]string{k.name, v})
		}
	}
	if len(pairs) == 0 {
		own := dsnform.Of(c.DSN)
		if c.DriverName == "" || c.DriverName == own.Driver() && dsnReadsBack(c.DSN, own) {
			return c.DSN
		}
	}
	// With no other key, respool_driver is written even when it names the
	// placement's default driver: it makes ParseDSN read the placement's
	// form.
	withDriver := c.DriverName != "" && (c.DriverName != form.Driver() || len(pairs) == 0)
	if withDriver {
		pairs = slices.Insert(pairs, 0, [2]string{dsnKeyDriver, c.DriverName})
	}

	var b strings.Builder
	if form == dsnform.KV {
		dsnWritePairs(&b, pairs, ' ', dsnQuoteKV)
		if c.DSN != "" {
			b.WriteByte(' ')
			b.WriteString(c.DSN)
		}
		return b.String()
	}
	q := dsnform.MySQLQuery(c.DSN)
	if form == dsnform.URL {
		var err error
		if q, err = dsnURLQuery(c.DSN); err != nil {
			q = -1
		}
	}
	b.WriteString(c.DSN)
	switch {
	case q < 0:
		b.WriteByte('?')
	case q < len(c.DSN)-1:
		b.WriteByte('&')
	}
	dsnWritePairs(&b, pairs, '&', dsnEscapeQuery)
	return b.String()
}

// dsnWritePairs writes key=value pairs separated by sep, each value encoded
// for the DSN's form.
func dsnWritePairs(b *strings.Builder, pairs [][2]string, sep byte, encode func(string) string) {
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(sep)
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(encode(p[1]))
	}
}

// dsnPlacement returns the form in which FormatDSN adds keys to d: d's own
// form when d reads back unchanged in it (no respool key, no empty query),
// else keyword/value when d is made of keyword=value elements.
func dsnPlacement(d string) dsnform.Form {
	if d != "" && strings.Trim(d, dsnform.Spaces) == "" {
		// Blank: keys written in front would take the blanks with them, as
		// the last element goes with the whitespace around it.
		return dsnform.MySQL
	}
	f := dsnform.Of(d)
	if dsnReadsBack(d, f) {
		return f
	}
	if f != dsnform.KV && dsnReadsBack(d, dsnform.KV) {
		return dsnform.KV
	}
	return f
}

func dsnReadsBack(d string, f dsnform.Form) bool {
	rest, params, err := dsnSplit(d, f)
	return err == nil && params == nil && rest == d
}

// dsnQuoteKV writes v as a libpq keyword/value value: as is when it has no
// whitespace, quote or backslash, else single-quoted with backslash escapes.
func dsnQuoteKV(v string) string {
	if v != "" && !strings.ContainsAny(v, dsnform.Spaces+`'\`) {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		if v[i] == '\'' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// dsnEscapeQuery percent-encodes every byte of v but A-Z a-z 0-9 - . _ ~, so
// that the value reads back the same in the URL and mysql forms and cannot
// contain a separator ('&', '=', '?', '/', '@', '+', space).
func dsnEscapeQuery(v string) string {
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
