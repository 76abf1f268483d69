package dsnform

import (
	"net/url"
	"strings"
)

// Param is one key of a namespace (such as respool_ or chaos_) found in a
// DSN by Read.
type Param struct {
	Key     string // as written; percent-decoded in the URL and mysql forms
	Value   string // decoded; as written when !ValueOK
	ValueOK bool   // false when the value could not be percent-decoded
}

// Text is a DSN read once by Read: its form, the keys of one namespace
// taken out of it, what remains for the driver, and the texts an error may
// show of its passwords. Whoever keeps a Text keeps these, and has no need
// to read the DSN again.
type Text struct {
	Form    Form
	Rest    string  // the DSN without the namespace's keys
	Params  []Param // the namespace's keys, in the order they appear
	Secrets Secrets // of the DSN's passwords (see Secrets)
}

// Read reads dsn in one pass over its elements: its form (Of), the keys
// whose names start with prefix (in any case) taken out, and its secrets.
// The rest keeps every other parameter's bytes and place: only the
// separators of the removed keys go ('&', or in the keyword/value form one
// whitespace byte after each, or before the ones that end the DSN), and a
// '?' left with an empty query; a keyword/value DSN left with whitespace
// only becomes empty.
//
// It returns an error for a DSN whose structure cannot be read (an
// unterminated quote or a malformed keyword/value element, an unterminated
// '[' in a URL host), and for a password that the DSN's form cannot carry
// as written: the error says how to encode it (percent-encoding in a URL,
// quotes in the keyword/value form) and never shows it or a piece of it.
// Errors name elements by their position, never by their text.
func Read(dsn, prefix string) (*Text, error) {
	t := tokenize(dsn)
	if err := t.err(); err != nil {
		return nil, err
	}
	if err := t.carried(); err != nil {
		return nil, err
	}
	rest, params := t.split(prefix)
	return &Text{Form: t.form, Rest: rest, Params: params, Secrets: t.secrets()}, nil
}

// Split returns the keys of dsn whose names start with prefix and the rest,
// as Read does, without reading its secrets or checking its passwords: for
// writing a DSN (FormatDSN), not for connecting with it.
func Split(dsn, prefix string) (rest string, params []Param, err error) {
	t := tokenize(dsn)
	if err := t.err(); err != nil {
		return "", nil, err
	}
	rest, params = t.split(prefix)
	return rest, params, nil
}

// element is one parameter of a DSN: a pair of a query (URL and mysql
// forms) or a keyword/value element.
type element struct {
	start, end int    // s[start:end] is the element
	valStart   int    // index of its value (keyword/value: its opening quote when quoted)
	key        string // decoded (query: percent-decoded and trimmed of spaces)
	rawKey     string // as written
	value      string // decoded; as written when !valueOK
	eqs        int    // query: how many '=' it holds; keyword/value: 1
	valueOK    bool
	quoted     bool // keyword/value: a single-quoted value
}

// tokens is a DSN split into its parts, once.
type tokens struct {
	s    string
	form Form
	// URL and mysql forms.
	query    int       // index of the '?' that starts the query, or -1
	elems    []element // the query's pairs, or the keyword/value elements
	userFrom int       // where the user information starts
	userEnd  int       // index of the '@' that ends it, or -1
	// URL form.
	hosts    urlHosts
	hostsErr error
	// Keyword/value form: the malformed element (index in s, and what is
	// wrong with it; problem is empty when none is).
	bad     int
	problem string
}

// tokenize splits s, read in its form (Of).
func tokenize(s string) *tokens { return tokenizeAs(s, Of(s)) }

// tokenizeAs splits s, read in form f.
func tokenizeAs(s string, f Form) *tokens {
	t := &tokens{s: s, form: f, query: -1, userEnd: -1}
	switch t.form {
	case URL:
		t.userFrom = urlPrefixLen(s)
		t.userEnd = urlUserEnd(s)
		t.hosts, t.hostsErr = urlReadHosts(s, max(t.userFrom, t.userEnd+1))
		t.query = t.hosts.query
		if t.hostsErr != nil {
			// The hosts cannot be read, and so neither can the query as
			// pgx would: take the first '?' after the user information.
			t.query = indexAfter(s, max(t.userFrom, t.userEnd+1), '?')
		}
		t.elems = queryElements(s, t.query, url.PathUnescape)
	case MySQL:
		t.query = MySQLQuery(s)
		t.userFrom, t.userEnd = mysqlUser(s, t.query)
		t.elems = queryElements(s, t.query, url.QueryUnescape)
	default:
		toks, bad, problem := KVTokens(s)
		t.bad, t.problem = bad, problem
		for _, k := range toks {
			quoted := k.ValStart < k.End && s[k.ValStart] == '\''
			t.elems = append(t.elems, element{start: k.Start, end: k.End, valStart: k.ValStart,
				key: k.Key, rawKey: k.Key, value: k.Value, eqs: 1, valueOK: true, quoted: quoted})
		}
	}
	return t
}

// mysqlUser returns where the user information of the mysql-form DSN s
// starts and the index of the '@' that ends it (-1 when there is none), as
// go-sql-driver/mysql reads it (the last '@' before the last '/' before the
// query), or for a scheme://user:password@host DSN of another driver as
// net/url reads it.
func mysqlUser(s string, query int) (from, at int) {
	head := s
	if query >= 0 {
		head = s[:query]
	}
	if se := schemeEnd(head); se >= 0 {
		from = se + len("://")
		auth := head[from:]
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if i := strings.LastIndexByte(auth, '@'); i >= 0 {
			return from, from + i
		}
		return from, -1
	}
	region := head
	if slash := strings.LastIndexByte(head, '/'); slash >= 0 {
		region = head[:slash]
	}
	return 0, strings.LastIndexByte(region, '@')
}

// schemeEnd returns the index of the ':' of a leading "scheme://", or -1.
func schemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z':
		case i > 0 && ('0' <= ch && ch <= '9' || ch == '+' || ch == '-' || ch == '.'):
		case i > 0 && ch == ':' && strings.HasPrefix(s[i:], "://"):
			return i
		default:
			return -1
		}
	}
	return -1
}

// queryElements splits the query of s that starts at the '?' at index q
// (none when q < 0) on '&'. Keys and values are decoded with unescape; a
// key is trimmed of spaces.
func queryElements(s string, q int, unescape func(string) (string, error)) []element {
	if q < 0 {
		return nil
	}
	var elems []element
	for i := q + 1; i <= len(s); {
		end := i + strings.IndexByte(s[i:]+"&", '&')
		seg := s[i:end]
		rawKey, rawValue, isPair := strings.Cut(seg, "=")
		e := element{start: i, end: end, valStart: -1, key: rawKey, rawKey: rawKey, value: rawValue,
			eqs: strings.Count(seg, "=")}
		if d, err := unescape(rawKey); err == nil {
			e.key = strings.Trim(d, " ")
		}
		if isPair {
			e.valStart = i + len(rawKey) + 1
		}
		if v, err := unescape(rawValue); err == nil {
			e.value, e.valueOK = v, true
		}
		elems = append(elems, e)
		i = end + 1
	}
	return elems
}

// err is the error of a DSN whose structure cannot be read.
func (t *tokens) err() error {
	switch {
	case t.form == URL && t.hostsErr != nil:
		return t.hostsErr
	case t.form == KV && t.problem != "":
		return kvError(len(t.elems)+1, t.problem)
	}
	return nil
}

// split returns the DSN without the elements whose keys start with prefix,
// and those elements (see Read).
func (t *tokens) split(prefix string) (string, []Param) {
	ours := func(e element) bool { return HasPrefixFold(e.key, prefix) || HasPrefixFold(e.rawKey, prefix) }
	var params []Param
	for _, e := range t.elems {
		if ours(e) {
			params = append(params, Param{Key: e.key, Value: e.value, ValueOK: e.valueOK})
		}
	}
	switch {
	case t.form == KV && params == nil:
		return t.s, nil
	case t.form == KV:
		return t.splitKV(ours), params
	case t.query < 0:
		return t.s, params
	}
	var kept []string
	for _, e := range t.elems {
		if !ours(e) {
			kept = append(kept, t.s[e.start:e.end])
		}
	}
	if query := strings.Join(kept, "&"); query != "" {
		return t.s[:t.query+1] + query, params
	}
	return t.s[:t.query], params
}

// splitKV removes the keyword/value elements that ours picks, each with one
// whitespace byte after it, except that the elements that end the DSN go
// with the whitespace before them instead.
func (t *tokens) splitKV(ours func(element) bool) string {
	s, elems := t.s, t.elems
	tail := len(elems) // elems[tail:] are ours
	for i, e := range elems {
		switch {
		case !ours(e):
			tail = len(elems)
		case tail == len(elems):
			tail = i
		}
	}
	if tail == 0 {
		return "" // nothing but our keys and whitespace
	}
	var b strings.Builder
	last := 0 // s[:last] is done
	for _, e := range elems[:tail] {
		if ours(e) {
			b.WriteString(s[last:e.start])
			last = e.end
			if last < len(s) && IsSpace(s[last]) {
				last++
			}
		}
	}
	end := len(s)
	if tail < len(elems) {
		// Only separators go: not back into the previous value, whose
		// last byte may be an escaped space.
		end = elems[tail].start
		for lo := max(last, elems[tail-1].end); end > lo && IsSpace(s[end-1]); end-- {
		}
	}
	b.WriteString(s[last:end])
	return b.String()
}
