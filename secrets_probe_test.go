package respool

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/chaos"
	"github.com/respool/respool/internal/dsnform"
)

// probeSpecials are the bytes that some DSN form treats specially; every
// one is in some probe password.
const probeSpecials = "@/?:,#&=()[];'\"\\% +!$*{}|^<>`~\t"

// probeMarkers are in every 3-byte window of a probe password and nowhere
// else in the probe's DSNs or in the drivers' messages, so that a window
// found in an output is a piece of the password.
const probeMarkers = "QJKW"

// probePasswords returns n passwords: a marker, a digit and a special byte
// in turn (some starting with the special), 4 to 8 specials each.
func probePasswords(n int) []string {
	pws := make([]string, n)
	for i := range pws {
		var b strings.Builder
		k := 4 + i%5
		if i%3 == 0 {
			b.WriteByte(probeSpecials[(i*3)%len(probeSpecials)])
		}
		for j := range k {
			b.WriteByte(probeMarkers[(i+j)%len(probeMarkers)])
			b.WriteByte(byte('2' + (i+j)%8))
			b.WriteByte(probeSpecials[(i*5+j*7)%len(probeSpecials)])
		}
		b.WriteByte(probeMarkers[(i+k)%len(probeMarkers)])
		b.WriteByte(byte('2' + i%8))
		pws[i] = b.String()
	}
	return pws
}

// probeFragment returns the first 3-byte window of pw that s shows, or
// "": a window as written (each holds a marker and a special byte), or of
// pw percent-encoded that holds a marker and a '%' (a window of hex
// digits and a marker may be a time stamp's).
func probeFragment(s, pw string) string {
	for i := 0; i+3 <= len(pw); i++ {
		if w := pw[i : i+3]; strings.Contains(s, w) {
			return w
		}
	}
	enc := dsnform.EscapeQuery(pw)
	for i := 0; i+3 <= len(enc); i++ {
		if w := enc[i : i+3]; strings.ContainsAny(w, probeMarkers) && strings.Contains(w, "%") && strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// probeForm writes a DSN with a password: host and port of the server, and
// the password as written (raw) or encoded for the form.
type probeForm struct {
	name string
	dsn  func(host, port, pw string) string
}

func probeQuoteKV(pw string) string {
	q := dsnform.QuoteKV(pw)
	if !strings.HasPrefix(q, "'") {
		q = "'" + q + "'"
	}
	return q
}

var probeForms = []probeForm{
	{"url-user-encoded", func(h, p, pw string) string {
		return "postgres://app:" + dsnform.EscapeQuery(pw) + "@" + net.JoinHostPort(h, p) + "/app?sslmode=disable"
	}},
	{"url-user-raw", func(h, p, pw string) string {
		return "postgres://app:" + pw + "@" + net.JoinHostPort(h, p) + "/app?sslmode=disable"
	}},
	{"url-query-encoded", func(h, p, pw string) string {
		return "postgres://app@" + net.JoinHostPort(h, p) + "/app?sslmode=disable&password=" + dsnform.EscapeQuery(pw)
	}},
	{"url-query-raw", func(h, p, pw string) string {
		return "postgres://app@" + net.JoinHostPort(h, p) + "/app?password=" + pw + "&sslmode=disable"
	}},
	{"url-bad-port", func(h, p, pw string) string {
		return "postgres://app:" + dsnform.EscapeQuery(pw) + "@" + h + ":" + p + "x/app"
	}},
	{"url-two-hosts", func(h, p, pw string) string {
		a := net.JoinHostPort(h, p)
		return "postgresql://app:" + dsnform.EscapeQuery(pw) + "@" + a + "," + a + "/app?target_session_attrs=any&sslmode=disable"
	}},
	{"kv-quoted", func(h, p, pw string) string {
		return "host=" + h + " port=" + p + " user=app password=" + probeQuoteKV(pw) + " dbname=app sslmode=disable"
	}},
	{"kv-raw", func(h, p, pw string) string {
		return "host=" + h + " port=" + p + " user=app password=" + pw + " dbname=app sslmode=disable"
	}},
	{"kv-bad-port", func(h, p, pw string) string {
		return "host=" + h + " port=" + p + "x user=app password=" + probeQuoteKV(pw) + " dbname=app"
	}},
	{"mysql", func(h, p, pw string) string {
		return "app:" + pw + "@tcp(" + net.JoinHostPort(h, p) + ")/app"
	}},
	{"mysql-params", func(h, p, pw string) string {
		return "app:" + pw + "@tcp(" + net.JoinHostPort(h, p) + ")/app?parseTime=true&loc=UTC"
	}},
	{"mysql-bad-param", func(h, p, pw string) string {
		return "app:" + pw + "@tcp(" + net.JoinHostPort(h, p) + ")/app?timeout=5x"
	}},
}

// silentServer accepts connections and never answers, until the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	return hungServer(t, nil)
}

// probeResult is what one path of one case showed.
type probeResult struct {
	path, form, target string
	leak               string // "" or what showed which piece
	refused            bool   // the DSN was refused before any connection attempt
}

// TestSecretsProbe runs passwords holding every special byte through the
// DSN forms (see probeForms), against a closed port and a silent server,
// through respool, chaos and the plain drivers, and checks that no output
// of respool or chaos (errors and their %v, %+v, %#v and JSON, Stats and
// their JSON, the health report and readiness, the log, the Connector and
// Config printed, String, GoString, LogValue) shows 3 bytes of a password.
// The plain drivers' leaks are counted for comparison only. It runs every
// other password against the closed port and every tenth against the
// silent server (RESPOOL_SECRETS_PROBE=full: all 100 against both).
func TestSecretsProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("the probe makes thousands of connection attempts")
	}
	pws := probePasswords(100)
	for _, c := range probeSpecials {
		if !slices.ContainsFunc(pws, func(pw string) bool { return strings.ContainsRune(pw, c) }) {
			t.Fatalf("no probe password holds %q", c)
		}
	}
	closed := closedAddr(t)
	silent := silentServer(t)
	full := os.Getenv("RESPOOL_SECRETS_PROBE") == "full"

	type job struct {
		pw, target, addr string
		form             probeForm
	}
	var jobs []job
	for i, pw := range pws {
		for _, f := range probeForms {
			if full || i%2 == 0 {
				jobs = append(jobs, job{pw, "closed", closed, f})
			}
			if full || i%10 == 0 {
				jobs = append(jobs, job{pw, "silent", silent, f})
			}
		}
	}
	results := make(chan []probeResult, len(jobs))
	work := make(chan job)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				host, port, _ := net.SplitHostPort(j.addr)
				results <- probeCase(t, j.form.name, j.target, j.form.dsn(host, port, j.pw), j.pw)
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	close(results)

	type key struct{ path, form, target string }
	cases, leaks, refused := map[key]int{}, map[key]int{}, map[key]int{}
	shown := map[string]int{}
	for rs := range results {
		for _, r := range rs {
			k := key{r.path, r.form, r.target}
			cases[k]++
			if r.refused {
				refused[k]++
			}
			if r.leak == "" {
				continue
			}
			leaks[k]++
			if r.path != "plain" && shown[r.path+r.form] < 2 {
				shown[r.path+r.form]++
				t.Errorf("%s, %s, %s: %s", r.path, r.form, r.target, r.leak)
			}
		}
	}
	total := map[string][2]int{}
	var b strings.Builder
	for _, f := range probeForms {
		for _, target := range []string{"closed", "silent"} {
			fmt.Fprintf(&b, "\n%-18s %-6s", f.name, target)
			for _, path := range []string{"respool", "chaos", "plain"} {
				k := key{path, f.name, target}
				fmt.Fprintf(&b, "  %s %3d/%3d (refused %3d)", path, leaks[k], cases[k], refused[k])
				t := total[path]
				total[path] = [2]int{t[0] + leaks[k], t[1] + cases[k]}
			}
		}
	}
	fmt.Fprintf(&b, "\ntotal (cases with a piece of 3 bytes or more shown / cases):")
	for _, path := range []string{"respool", "chaos", "plain"} {
		fmt.Fprintf(&b, "  %s %d/%d", path, total[path][0], total[path][1])
	}
	t.Log(b.String())
}

// probeTimeout bounds each connection attempt of the probe: the silent
// server never answers, so its attempts end with it.
const probeTimeout = 150 * time.Millisecond

// probeCase runs one DSN through respool, chaos and the plain driver.
func probeCase(t *testing.T, form, target, dsn, pw string) []probeResult {
	check := func(path string, outputs map[string]string, refused bool) probeResult {
		r := probeResult{path: path, form: form, target: target, refused: refused}
		for how, s := range outputs {
			if f := probeFragment(s, pw); f != "" {
				r.leak = fmt.Sprintf("%s shows %q of %q: %s", how, f, pw, s)
				break
			}
		}
		return r
	}
	rOut, rRefused := probeRespool(t, dsn)
	cOut, cRefused := probeChaos(dsn)
	pOut, pRefused := probePlain(dsn)
	return []probeResult{
		check("respool", rOut, rRefused),
		check("chaos", cOut, cRefused),
		check("plain", pOut, pRefused),
	}
}

func probeRespool(t *testing.T, dsn string) (map[string]string, bool) {
	out := map[string]string{"RedactDSN": RedactDSN(dsn)}
	cfg, err := ParseDSN(dsn)
	if err != nil {
		for how, s := range errorOutputs(err) {
			out["ParseDSN error "+how] = s
		}
		return out, true
	}
	for how, s := range configOutputs(cfg) {
		out["Config "+how] = s
	}
	cfg.Pool.MinIdle = 0
	co, _, err := connectorOutputs(t, *cfg, probeTimeout)
	if err != nil {
		for how, s := range errorOutputs(err) {
			out["NewConnector error "+how] = s
		}
		return out, true
	}
	for how, s := range co {
		out[how] = s
	}
	return out, false
}

func probeChaos(dsn string) (map[string]string, bool) {
	out, refused := probeOpen("chaos", dsn)
	if cfg, err := chaos.ParseDSN(dsn); err == nil {
		if c, err := chaos.NewConnector(*cfg); err == nil {
			for _, verb := range []string{"%v", "%+v", "%#v"} {
				out["Connector "+verb] = fmt.Sprintf(verb, c)
			}
			_ = c.Close()
		}
	}
	return out, refused
}

func probePlain(dsn string) (map[string]string, bool) {
	return probeOpen(dsnform.Of(dsn).Driver(), dsn)
}

// probeOpen opens dsn with the driver name and pings it once: it returns
// the outputs of the errors, and whether sql.Open refused the DSN.
func probeOpen(name, dsn string) (map[string]string, bool) {
	out := map[string]string{}
	db, err := sql.Open(name, dsn)
	if err != nil {
		for how, s := range errorOutputs(err) {
			out["sql.Open error "+how] = s
		}
		return out, true
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		for how, s := range errorOutputs(err) {
			out["Ping error "+how] = s
		}
	}
	return out, false
}
