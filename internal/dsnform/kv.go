package dsnform

import (
	"fmt"
	"strings"
)

// KVToken is one keyword=value element of a keyword/value DSN.
type KVToken struct {
	Start    int    // index of the keyword
	ValStart int    // index of the value (its opening quote when quoted)
	End      int    // index just after the value (after its closing quote)
	Key      string // the keyword
	Value    string // the value, unquoted and unescaped
}

// What is wrong with a malformed element, as KVTokens tells it.
const (
	NotKeyValue  = "is not keyword=value"
	EmptyKeyword = "has an empty keyword"
	Unterminated = "has an unterminated quoted value"
)

// KVTokens splits a keyword/value DSN as libpq does. When an element is
// malformed it returns the elements before it, the malformed element's index
// in s and what is wrong with it (NotKeyValue, EmptyKeyword or
// Unterminated); otherwise bad is len(s) and problem empty. Callers name the
// element by its position (len(toks)+1) only, since its text may be part of
// a password.
func KVTokens(s string) (toks []KVToken, bad int, problem string) {
	for i := skipSpaces(s, 0); i < len(s); i = skipSpaces(s, i) {
		start := i
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return toks, start, NotKeyValue
		}
		eq += i
		key := strings.TrimRight(s[i:eq], Spaces)
		if key == "" {
			return toks, start, EmptyKeyword
		}
		if strings.ContainsAny(key, Spaces) {
			return toks, start, NotKeyValue
		}
		j := skipSpaces(s, eq+1)
		t := KVToken{Start: start, ValStart: j, Key: key}
		if j < len(s) && s[j] == '\'' {
			end := QuoteEnd(s, j)
			if end < 0 {
				return toks, start, Unterminated
			}
			t.Value, t.End = UnescapeKV(s[j+1:end-1]), end
		} else {
			k := j
			for ; k < len(s) && !IsSpace(s[k]); k++ {
				if s[k] == '\\' {
					k++
					if k == len(s) {
						break
					}
				}
			}
			t.Value, t.End = UnescapeKV(s[j:k]), k
		}
		toks = append(toks, t)
		i = t.End
	}
	return toks, len(s), ""
}

// QuoteEnd returns the index just after the quote that closes the
// single-quoted value that starts at s[start], or -1 when no quote closes it.
// A backslash makes the next byte literal.
func QuoteEnd(s string, start int) int {
	for k := start + 1; k < len(s); k++ {
		switch s[k] {
		case '\\':
			k++
		case '\'':
			return k + 1
		}
	}
	return -1
}

// UnescapeKV applies libpq's backslash rule: a backslash is dropped and the
// byte after it taken literally; a final backslash is dropped.
func UnescapeKV(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kvError is the error of the n-th element of a keyword/value DSN, which
// problem (see KVTokens) describes. It names the element by its position
// only: its text may be part of a password.
func kvError(n int, problem string) error {
	hint := ""
	switch problem {
	case NotKeyValue:
		hint = ": single-quote a value that holds spaces (key='a b')"
	case Unterminated:
		hint = `: escape a quote or backslash inside a value (\' and \\)`
	}
	return fmt.Errorf("keyword/value form: element %d %s%s", n, problem, hint)
}

// QuoteKV writes v as a libpq keyword/value value: as is when it has no
// whitespace, quote or backslash, else single-quoted with backslash escapes.
func QuoteKV(v string) string {
	if v != "" && !strings.ContainsAny(v, Spaces+`'\`) {
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
