package health

import (
	"strings"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
)

// Defaults of the zero Config, written on its fields.
const (
	defaultProbeTimeout = time.Second
	defaultLivePath     = "/livez"
	defaultReadyPath    = "/readyz"
	defaultReportPath   = "/health"
)

// defaultQuantiles are the acquire-wait quantiles of a report whose Config
// has none. Never modified.
var defaultQuantiles = []float64{0.5, 0.9, 0.99}

// Config configures a Checker. Every zero value means the default written
// beside it; New validates it.
type Config struct {
	// ProbeTimeout bounds each source's Probe in a readiness check: a
	// source that cannot hand out an object within it is not ready.
	// Zero means 1s.
	ProbeTimeout time.Duration
	// Quantiles are the acquire-wait quantiles reported, each in (0, 1].
	// Nil means 0.5, 0.9 and 0.99.
	Quantiles []float64
	// Redact, when set, is applied to every error text after the package's
	// own redaction (the passwords of DSNs and of password=... values):
	// for secrets of your own.
	Redact func(string) string
	// Clock gives the time of reports. Nil means clock.System(); tests set
	// a clocktest.Clock.
	Clock clock.Clock
	// LivePath, ReadyPath and ReportPath are the Handler's paths; each must
	// begin with '/' and differ from the others. Empty means /livez,
	// /readyz and /health.
	LivePath, ReadyPath, ReportPath string
	// AdminPath, when set, turns on the Handler's admin endpoints under it,
	// for POST only: AdminPath/{source}/reset resets the source's pool
	// (Source.Reset: every connection closed, idle ones now, those in use
	// when given back) and AdminPath/{source}/resize with max and min_idle
	// (form or query values) resizes it (Source.Resize). They change the
	// pools: serve them only where operators reach them, as the Handler
	// authenticates nobody. It must begin with '/', not end with one, and
	// differ from the other paths. Empty means no admin endpoint.
	AdminPath string
}

// withDefaults validates c and returns it with its defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if err := resil.Check(c.ProbeTimeout >= 0, "health", "ProbeTimeout", c.ProbeTimeout, "a duration >= 0 (0: 1s)"); err != nil {
		return c, err
	}
	for _, q := range c.Quantiles {
		if err := resil.Check(q > 0 && q <= 1, "health", "Quantiles", c.Quantiles, "quantiles in (0, 1]"); err != nil {
			return c, err
		}
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = defaultProbeTimeout
	}
	if c.Quantiles == nil {
		c.Quantiles = defaultQuantiles
	}
	c.Clock = resil.ClockOr(c.Clock)
	paths := []struct {
		field string
		p     *string
		def   string
	}{{"LivePath", &c.LivePath, defaultLivePath}, {"ReadyPath", &c.ReadyPath, defaultReadyPath}, {"ReportPath", &c.ReportPath, defaultReportPath}}
	seen := map[string]string{}
	for _, f := range paths {
		if *f.p == "" {
			*f.p = f.def
		}
		if !strings.HasPrefix(*f.p, "/") {
			return c, resil.Check(false, "health", f.field, *f.p, "a path beginning with '/'")
		}
		if other, ok := seen[*f.p]; ok {
			return c, resil.Check(false, "health", f.field, *f.p, "a path other than "+other+"'s")
		}
		seen[*f.p] = f.field
	}
	if c.AdminPath != "" {
		if !strings.HasPrefix(c.AdminPath, "/") || strings.HasSuffix(c.AdminPath, "/") {
			return c, resil.Check(false, "health", "AdminPath", c.AdminPath, "a path beginning with '/' and not ending with one (empty: no admin endpoint)")
		}
		if other, ok := seen[c.AdminPath]; ok {
			return c, resil.Check(false, "health", "AdminPath", c.AdminPath, "a path other than "+other+"'s")
		}
	}
	return c, nil
}
