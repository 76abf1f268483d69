package respool

import (
	"slices"

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
		if c.DriverName == "" || c.DriverName == own.Driver() && dsnform.ReadsBack(c.DSN, own, dsnKeyPrefix) {
			return c.DSN
		}
	}
	// With no other key, respool_driver is written even when it names the
	// placement's default driver: it makes ParseDSN read the placement's
	// form.
	form := dsnform.Placement(c.DSN, dsnKeyPrefix)
	if c.DriverName != "" && (c.DriverName != form.Driver() || len(pairs) == 0) {
		pairs = slices.Insert(pairs, 0, [2]string{dsnKeyDriver, c.DriverName})
	}
	return dsnform.Append(c.DSN, form, pairs)
}
