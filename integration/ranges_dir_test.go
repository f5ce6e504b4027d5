package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	caddyrobots "github.com/caddyrobots/caddy-robots"
)

// writeGPTBotList writes openai-gptbot.json, holding 198.51.100.0/24 and
// created at created, into a new directory, as `caddy robots ranges fetch`
// would.
func writeGPTBotList(t *testing.T, created time.Time) string {
	t.Helper()
	dir := t.TempDir()
	body := `{"creationTime": "` + created.UTC().Format(time.RFC3339) + `", "prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]}`
	if err := os.WriteFile(filepath.Join(dir, "openai-gptbot.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRangesDir: verify { ranges_dir } reads a mirror's lists through a
// real Caddy. A fresh list proves a GPTBot claim from outside it a spoof;
// the same list created 40 days ago no longer does (the 30-day rule, as
// for a download), though it still verifies the addresses it holds. A
// directory that is missing or holds no list fails the config, saying so.
func TestRangesDir(t *testing.T) {
	t.Setenv(caddyrobots.RangesOperatorsEnv, "off")
	fresh := writeGPTBotList(t, time.Now().Add(-24*time.Hour))
	stale := writeGPTBotList(t, time.Now().Add(-40*24*time.Hour))
	cfg := strings.Replace(globals, "auto_https off", `auto_https off
	servers {
		trusted_proxies static 127.0.0.1/32
	}`, 1)
	block := func(host, dir string) string {
		return siteURL(host) + ` {
	robots {
		source inline "User-agent: *\nAllow: /\n"
		verify {
			ranges_dir ` + dir + `
			ranges_refresh off
		}
	}
	respond "ok"
}
`
	}
	c := newClient(t, cfg+block("freshdir.localhost", fresh)+block("staledir.localhost", stale))
	spoofed := func(r response) bool { return r.status == 403 && strings.Contains(r.body, "claims to be GPTBot") }
	for _, tc := range []struct {
		host, from string
		spoof      bool
	}{
		{"freshdir.localhost", "192.0.2.77", true},
		{"freshdir.localhost", "198.51.100.9", false},
		{"staledir.localhost", "192.0.2.77", false},
		{"staledir.localhost", "198.51.100.9", false},
	} {
		res := c.get(siteURL(tc.host)+"/page", gptbotUA, "X-Forwarded-For: "+tc.from)
		if spoofed(res) != tc.spoof || (!tc.spoof && res.status != 200) {
			t.Errorf("%s, GPTBot from %s: %d %q; want spoofed %v", tc.host, tc.from, res.status, res.body, tc.spoof)
		}
	}

	// The status names the file each list was read from, not the
	// operator's URL.
	type ipList struct {
		Method     string   `json:"method"`
		Sources    []string `json:"sources"`
		AgeSeconds float64  `json:"age_seconds"`
	}
	var st struct {
		// The lists shared by the handlers, once; a handler with others
		// lists its own.
		IPLists  []ipList `json:"ip_lists"`
		Handlers []struct {
			IPLists []ipList `json:"ip_lists"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	want := map[string]bool{filepath.Join(fresh, "openai-gptbot.json"): true, filepath.Join(stale, "openai-gptbot.json"): true}
	lists := st.IPLists
	for _, h := range st.Handlers {
		lists = append(lists, h.IPLists...)
	}
	for _, l := range lists {
		if l.Method != "openai-gptbot" {
			continue
		}
		if len(l.Sources) != 1 || !want[l.Sources[0]] {
			t.Errorf("openai-gptbot sources %v, want one of %v", l.Sources, want)
			continue
		}
		delete(want, l.Sources[0])
		days := l.AgeSeconds / 86400
		if isStale := strings.HasPrefix(l.Sources[0], stale); (isStale && (days < 39.9 || days > 40.1)) || (!isStale && (days < 0.9 || days > 1.1)) {
			t.Errorf("%s: the list is %.2f days old; want its creationTime's age", l.Sources[0], days)
		}
	}
	if len(want) != 0 {
		t.Errorf("files not shown as sources: %v", want)
	}

	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(fresh, "missing"), "no such file or directory"},
		{t.TempDir(), "holds no IP list"},
	} {
		caddytest.AssertLoadError(t, globals+block("baddir.localhost", tc.dir), "caddyfile", "ranges_dir")
		caddytest.AssertLoadError(t, globals+block("baddir.localhost", tc.dir), "caddyfile", tc.want)
	}
	caddytest.AssertLoadError(t, globals+siteURL("baddir.localhost")+` {
	robots {
		verify {
			ranges_dir
		}
	}
}
`, "caddyfile", "ranges_dir needs one directory")
}
