package respool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The Stats of a Connector whose last connection attempt failed marshal
// to JSON, with the error's message and without the password: pgx's
// *pgconn.ConnectError holds its *pgconn.Config, whose funcs JSON cannot
// marshal (json: unsupported type: func() time.Time) and whose Password it
// would show. errors.As still finds pgx's error in Stats.
func TestStatsMarshalJSON(t *testing.T) {
	c := pingClosedPort(t, "&respool_retry_connect=1&respool_breaker=off", testLogger(t))
	st := c.Stats()
	var ce *pgconn.ConnectError
	if !errors.As(st.LastCreateError, &ce) {
		t.Fatalf("LastCreateError = %T %v; want pgx's *pgconn.ConnectError", st.LastCreateError, st.LastCreateError)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("json.Marshal(Stats): %v", err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if msg, _ := back["LastCreateError"].(string); msg != st.LastCreateError.Error() || !strings.Contains(msg, "failed to connect") {
		t.Errorf("JSON LastCreateError = %v; want the error's message", back["LastCreateError"])
	}
	if hasMark(string(b)) {
		t.Errorf("JSON of Stats shows the password: %s", b)
	}
	if b, err := json.Marshal(c.ResilienceStats()); err != nil || hasMark(string(b)) {
		t.Errorf("json.Marshal(ResilienceStats()) = %s, %v; want JSON without the password", b, err)
	}
}
