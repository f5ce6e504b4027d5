package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTrapMarkKeptOverReload: a config reload keeps the mark of a client
// that took the trap (a crawler does not shed it by waiting for the next
// deploy), while another User-Agent on the same address stays unmarked.
// Over plain HTTP to a host that is not loopback, so only the trap judges.
func TestTrapMarkKeptOverReload(t *testing.T) {
	config := func(greeting string) string {
		return globals + fmt.Sprintf(`
http://:%d {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		trap /no-robots/
	}
	respond %q
}
`, crawlPort, greeting)
	}
	// Browsers' strings of their own, so that no other test's mark (the
	// marks are the process's) can be theirs.
	ua := strings.Replace(chromeUA, "Chrome/131.0.0.0", "Chrome/131.0.6778.204", 1)
	other := strings.Replace(chromeUA, "Chrome/131.0.0.0", "Chrome/131.0.6778.205", 1)
	c := newClient(t, config("first"))
	get := func(path, ua string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+hostPort("127.0.0.1", crawlPort)+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = hostPort("trap-reload.example", crawlPort)
		req.Header.Set("User-Agent", ua)
		res, err := c.tc.Client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}

	if s, body := get("/no-robots/", ua); s != 403 || !strings.Contains(body, "judged by the \"*\" group") {
		t.Fatalf("the trap: %d %q", s, body)
	}
	if s, body := get("/private/a", ua); s != 403 {
		t.Fatalf("the marked client before the reload: %d %q, want 403", s, body)
	}

	c = newClient(t, config("second"))
	if s, body := get("/", ua); s != 200 || body != "second" {
		t.Fatalf("after the reload, /: %d %q, want the new config's 200 \"second\"", s, body)
	}
	if s, body := get("/private/a", ua); s != 403 || !strings.Contains(body, "trap") {
		t.Errorf("the marked client after the reload: %d %q, want the trap's 403", s, body)
	}
	if s, body := get("/private/a", other); s != 200 {
		t.Errorf("another User-Agent on the address after the reload: %d %q, want 200", s, body)
	}
}
