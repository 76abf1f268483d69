package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// post POSTs form to path on h and returns the status and body.
func post(t *testing.T, h http.Handler, path string, form url.Values) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestAdminEndpointsAreOffByDefault(t *testing.T) {
	var s server
	c := newChecker(t, health.Config{})
	if err := c.Add("orders", health.FromPool(newPool(t, &s, pool.Config{MaxObjects: 2}))); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/admin/orders/reset", "/orders/reset", "/health/orders/reset"} {
		if code, _ := post(t, c.Handler(), path, nil); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s without AdminPath = %d, want 404 or 405", path, code)
		}
	}
}

func TestAdminResetAndResize(t *testing.T) {
	var s server
	p := newPool(t, &s, pool.Config{MaxObjects: 4})
	c := newChecker(t, health.Config{AdminPath: "/admin"})
	if err := c.Add("orders", health.FromPool(p)); err != nil {
		t.Fatal(err)
	}
	if err := c.Add("bare", health.Source{Stats: p.Stats}); err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	hd, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.GiveBack(); err != nil {
		t.Fatal(err)
	}

	code, body := post(t, h, "/admin/orders/reset", nil)
	if code != http.StatusOK || !strings.Contains(body, `"action": "reset"`) {
		t.Fatalf("POST reset = %d %s", code, body)
	}
	waitUntil(t, "the idle object is destroyed as reset", func() bool { return p.Stats().Destroys.Reset == 1 })

	code, body = post(t, h, "/admin/orders/resize", url.Values{"max": {"2"}, "min_idle": {"1"}})
	if code != http.StatusOK || !strings.Contains(body, `"max_objects": 2`) || !strings.Contains(body, `"min_idle": 1`) {
		t.Fatalf("POST resize = %d %s", code, body)
	}
	if got := p.Stats().MaxObjects; got != 2 {
		t.Fatalf("MaxObjects = %d after the resize, want 2", got)
	}
	if code, _ := get(t, h, "/admin/orders/reset"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET reset = %d, want 405", code)
	}

	for _, tc := range []struct {
		path string
		form url.Values
		code int
		want string
	}{
		{"/admin/nobody/reset", nil, 404, `no source \"nobody\"`},
		{"/admin/bare/reset", nil, 404, `source \"bare\" has no reset`},
		{"/admin/bare/resize", url.Values{"max": {"2"}, "min_idle": {"0"}}, 404, `has no resize`},
		{"/admin/orders/resize", url.Values{"max": {"abc"}, "min_idle": {"0"}}, 400, `max = \"abc\": want an integer`},
		{"/admin/orders/resize", url.Values{"max": {"2"}}, 400, `min_idle is required`},
		{"/admin/orders/resize", url.Values{"max": {"9"}, "min_idle": {"0"}}, 400, `Config.MaxObjects = 9: want between 1 and 4`},
		{"/admin/orders/resize", url.Values{"max": {"2"}, "min_idle": {"3"}}, 400, `Config.MinIdle = 3: want between 0 and 2`},
	} {
		code, body := post(t, h, tc.path, tc.form)
		if code != tc.code || !strings.Contains(body, tc.want) || !strings.Contains(body, `"error"`) {
			t.Errorf("POST %s %v = %d %s; want %d saying %s", tc.path, tc.form, code, body, tc.code, tc.want)
		}
	}
	if got := p.Stats().MaxObjects; got != 2 {
		t.Fatalf("MaxObjects = %d after refused resizes, want 2", got)
	}
	p.StartClose()
	if code, body := post(t, h, "/admin/orders/resize", url.Values{"max": {"2"}, "min_idle": {"0"}}); code != http.StatusConflict {
		t.Errorf("resize of a closed pool = %d %s, want 409", code, body)
	}
}

func TestAdminPathIsValidated(t *testing.T) {
	for _, path := range []string{"admin", "/admin/", "/", "/health"} {
		_, err := health.New(health.Config{AdminPath: path})
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != "AdminPath" {
			t.Errorf("AdminPath %q: %v, want a ConfigError on AdminPath", path, err)
		}
	}
}
