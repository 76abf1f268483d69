package respool

import (
	"reflect"
	"strings"
	"testing"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/retry"
)

// TestOffTurnsEveryKeyOff checks that every key whose setting can be
// turned off accepts "off" (any case), and keeps the old spellings: "none"
// and 0 where they meant it, and 0 where a zero was refused
// (respool_max_idle_time=0 and respool_leak_threshold=0 were errors). A
// boolean key takes off as false; respool_log=off is tested with the levels.
func TestOffTurnsEveryKeyOff(t *testing.T) {
	tests := []struct {
		key      string
		spelling []string
		want     Config
	}{
		{"respool_max_idle_time", []string{"off", "OFF", "none", "0", "0s"}, Config{Pool: pool.Config{MaxIdle: -1}}},
		{"respool_max_lifetime", []string{"off", "0"}, Config{}},
		{"respool_max_lifetime_jitter", []string{"off", "0"}, Config{}},
		{"respool_acquire_timeout", []string{"off", "0"}, Config{}},
		{"respool_close_timeout", []string{"off", "0"}, Config{}},
		{"respool_cancel_wait", []string{"off", "none", "0"}, Config{CancelWait: -1}},
		{"respool_session_end_wait", []string{"off", "none", "0"}, Config{SessionEndWait: -1}},
		{"respool_leak_detection", []string{"off", "0", "false"}, Config{Pool: pool.Config{LeakTrackingDisabled: true}}},
		{"respool_leak_stack", []string{"off", "0"}, Config{}},
		{"respool_leak_threshold", []string{"off", "none", "0"}, Config{Pool: pool.Config{HoldThreshold: -1}}},
		{"respool_create_backoff", []string{"off", "none", "0"}, Config{Pool: pool.Config{BackoffDisabled: true}}},
		{"respool_back_pressure", []string{"off", "0"}, Config{BackPressureDisabled: true}},
		{"respool_breaker", []string{"off", "0"}, Config{Resilience: dbguard.Config{BreakerDisabled: true}}},
		{"respool_breaker_slow_call", []string{"off", "none", "0"}, Config{}},
		{"respool_retry_connect", []string{"off", "none"}, Config{Resilience: dbguard.Config{Retry: retry.Config[struct{}]{MaxAttempts: 1}}}},
		{"respool_connect_rate", []string{"off", "none", "0"}, Config{}},
		{"respool_pause", []string{"off", "0"}, Config{Resilience: dbguard.Config{PauseDisabled: true}}},
	}
	for _, tt := range tests {
		for _, v := range tt.spelling {
			dsn := "postgres://h/db?" + tt.key + "=" + v
			c, err := ParseDSN(dsn)
			if err != nil {
				t.Errorf("%s=%s: %v", tt.key, v, err)
				continue
			}
			want := tt.want
			want.DriverName, want.DSN = "pgx", "postgres://h/db"
			if !reflect.DeepEqual(*c, want) {
				t.Errorf("%s=%s:\n got %#v\nwant %#v", tt.key, v, *c, want)
			}
			checkRoundTrip(t, dsn)
		}
	}
	// Every key listed accepts off, and its error says so.
	for _, k := range dsnKeys {
		if strings.Contains(k.accepted, `"off"`) || strings.Contains(k.accepted, `"none"`) {
			found := false
			for _, tt := range tests {
				found = found || tt.key == k.name
			}
			if !found && k.name != "respool_log" {
				t.Errorf("%s accepts off (%s) but is not in this test", k.name, k.accepted)
			}
		}
	}
	for _, tt := range tests {
		if k := dsnLookupKey(tt.key); k == nil || !strings.Contains(k.accepted, `"off"`) && k.kind != dsnBool {
			t.Errorf("%s: accepted %q does not name off", tt.key, k.accepted)
		}
	}
}
