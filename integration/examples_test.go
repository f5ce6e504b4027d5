package integration

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

// exampleVars are the environment variables the example configs read;
// the tests clear them so that the defaults show.
var exampleVars = []string{"PORT", "CADDY_ADMIN", "SITE", "ROOT", "UPSTREAM", "ROBOTS_REDIS_URL"}

// exampleCaddyfiles returns the Caddyfile examples, relative to the
// repository root: the demo and every examples/*/Caddyfile.
func exampleCaddyfiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoPath("examples/*/Caddyfile"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/*/Caddyfile found (%v)", err)
	}
	out := []string{"Caddyfile.example"}
	for _, f := range files {
		rel, err := filepath.Rel(repoPath("."), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// clearExampleVars unsets the variables the examples read, for this test.
func clearExampleVars(t *testing.T) {
	t.Helper()
	for _, v := range exampleVars {
		t.Setenv(v, "") // restores the old value when the test ends
		if err := os.Unsetenv(v); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExamplesSayWhatTheyNeed: the first line of each Caddyfile example
// says what it needs, and the command it shows names its own path, so a
// command copied from it runs that example.
func TestExamplesSayWhatTheyNeed(t *testing.T) {
	for _, f := range exampleCaddyfiles(t) {
		raw, err := os.ReadFile(repoPath(f))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(raw), "\n")
		if f != "Caddyfile.example" && !strings.HasPrefix(first, "# Needs") {
			t.Errorf("%s: the first line should say what the example needs (\"# Needs ...\"), got %q", f, first)
		}
		if cmd := "go run ./cmd/caddy run --config " + f; !strings.Contains(string(raw), cmd) {
			t.Errorf("%s does not show its own command %q", f, cmd)
		}
	}
	readme, err := os.ReadFile(repoPath("examples/json/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(readme), "\n")
	if want := "go run ./cmd/caddy run --config examples/json/caddy.json --envfile examples/json/defaults.env"; !strings.Contains(first, want) {
		t.Errorf("examples/json/README.md: the first line %q should give the command %q", first, want)
	}
}

// TestExamplesAdaptWithDefaults adapts every Caddyfile example with none
// of its variables set: no error, no warning, and the demo listens where
// the README says (:8080, admin on localhost:2019).
func TestExamplesAdaptWithDefaults(t *testing.T) {
	clearExampleVars(t)
	for _, f := range exampleCaddyfiles(t) {
		raw, err := os.ReadFile(repoPath(f))
		if err != nil {
			t.Fatal(err)
		}
		out, warns, err := caddyconfig.GetAdapter("caddyfile").Adapt(raw, map[string]any{"filename": f})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, w := range warns {
			t.Errorf("%s: warning: %s", f, w.String())
		}
		if !strings.Contains(string(out), `"handler":"robots"`) {
			t.Errorf("%s: the adapted config has no robots handler: %s", f, out)
		}
		if f == "Caddyfile.example" {
			var cfg struct {
				Admin struct{ Listen string }
				Apps  struct {
					HTTP struct {
						Servers map[string]struct{ Listen []string }
					}
				}
			}
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.Admin.Listen != "localhost:2019" {
				t.Errorf("demo: admin listens on %q with CADDY_ADMIN unset, want localhost:2019", cfg.Admin.Listen)
			}
			if s := cfg.Apps.HTTP.Servers["srv0"]; len(s.Listen) != 1 || s.Listen[0] != ":8080" {
				t.Errorf("demo: listens on %v with PORT unset, want [:8080]", s.Listen)
			}
		}
	}
	// The JSON example's defaults live in its env file.
	env, err := os.ReadFile(repoPath("examples/json/defaults.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PORT=8080\n", "CADDY_ADMIN=localhost:2019\n"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("examples/json/defaults.env lacks %q", strings.TrimSpace(want))
		}
	}
}

// runningExample is an example config running in its own Caddy process.
type runningExample struct {
	t      *testing.T
	port   int    // the site's port
	admin  string // the admin endpoint, host:port
	client *http.Client
}

// startExample runs the example config (relative to the repository root)
// with cmd/caddy from the repository root, on free ports given through
// PORT and CADDY_ADMIN, plus env ("KEY=value"; "{port}" in a value is the
// site's port). It returns when the site's port accepts connections.
func startExample(t *testing.T, config string, env []string, args ...string) *runningExample {
	t.Helper()
	ports, err := freeport.Take(2)
	if err != nil {
		t.Fatal(err)
	}
	ex := &runningExample{
		t: t, port: ports[0], admin: hostPort("localhost", ports[1]),
		client: &http.Client{Transport: caddytest.CreateTestingTransport(), Timeout: 20 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	dir := t.TempDir()
	cmd := exec.Command(caddyBinary(t), append([]string{"run", "--config", config}, args...)...)
	cmd.Dir = repoPath(".")
	// None of the examples' variables leaks in from the test's own
	// environment: unset, not empty ({$ROOT:examples/site} is empty when
	// ROOT is set to nothing).
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !slices.Contains(exampleVars, k) {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir,
		"PORT="+strconv.Itoa(ex.port), "CADDY_ADMIN="+ex.admin)
	for _, e := range env {
		cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "{port}", strconv.Itoa(ex.port)))
	}
	logPath := filepath.Join(dir, "caddy.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", config, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", config, out)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			out, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited before listening:\n%s", config, out)
		default:
		}
		if conn, err := net.DialTimeout("tcp", hostPort("127.0.0.1", ex.port), 200*time.Millisecond); err == nil {
			conn.Close()
			return ex
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on port %d within 30 s", config, ex.port)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get sends GET path to host (empty: localhost) on the example's port as
// ua, and fails the test unless the status is want and the body contains
// each of contains.
func (ex *runningExample) get(host, path, ua string, want int, contains ...string) string {
	ex.t.Helper()
	if host == "" {
		host = "localhost"
	}
	url := "http://" + hostPort(host, ex.port) + path
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		ex.t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	if ua == chromeUA {
		// A person's Chrome sends its Fetch Metadata to localhost, a
		// secure context: a bare Chrome User-Agent is a script's claim.
		for _, h := range browserNav {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(k, strings.TrimSpace(v))
		}
	}
	res, err := ex.client.Do(req)
	if err != nil {
		ex.t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		ex.t.Errorf("GET %s as %q: status %d, want %d; body %q", url, ua, res.StatusCode, want, body)
	}
	for _, s := range contains {
		if !strings.Contains(string(body), s) {
			ex.t.Errorf("GET %s as %q: body %q lacks %q", url, ua, body, s)
		}
	}
	return string(body)
}

// adminGet returns the body of GET path on the example's admin endpoint.
func (ex *runningExample) adminGet(path string) string {
	ex.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+ex.admin+path, nil)
	if err != nil {
		ex.t.Fatal(err)
	}
	res, err := ex.client.Do(req)
	if err != nil {
		ex.t.Fatalf("GET admin %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		ex.t.Fatalf("GET admin %s: status %d: %s", path, res.StatusCode, body)
	}
	return string(body)
}

// status is the part of /robots/status the examples check.
type exampleStatus struct {
	Handlers []struct {
		Mode         string `json:"mode"`
		TopOffenders []struct {
			Crawler string `json:"crawler"`
			Refused uint64 `json:"refused"`
		} `json:"top_offenders"`
		Store struct {
			Type    string `json:"type"`
			Healthy bool   `json:"healthy"`
		} `json:"store"`
	} `json:"handlers"`
}

func (ex *runningExample) status() exampleStatus {
	ex.t.Helper()
	var st exampleStatus
	if err := json.Unmarshal([]byte(ex.adminGet("/robots/status")), &st); err != nil {
		ex.t.Fatalf("/robots/status: %v", err)
	}
	if len(st.Handlers) != 1 {
		ex.t.Fatalf("/robots/status: %d handlers, want 1", len(st.Handlers))
	}
	return st
}

const robotsTxtWithPrivate = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n"

// TestExamplesRun starts every example as the commands in their first
// lines do, each in its own Caddy on free ports, and checks what its
// comment says it does.
func TestExamplesRun(t *testing.T) {
	t.Run("demo", func(t *testing.T) {
		ex := startExample(t, "Caddyfile.example", nil)
		ex.get("", "/robots.txt", gptbotUA, 200, "User-agent: GPTBot")
		ex.get("", "/", gptbotUA, 403, "Refused: /robots.txt disallows this path for GPTBot.", "Rule: Disallow: / (line 6)")
		ex.get("", "/private/", chromeUA, 200)
		// The dashboard's "top refused crawlers" panel tells operators to
		// read .handlers[].top_offenders[] | .crawler, .refused: it is there.
		st := ex.status()
		found := false
		for _, o := range st.Handlers[0].TopOffenders {
			found = found || o.Crawler == "GPTBot" && o.Refused >= 1
		}
		if !found {
			t.Errorf("/robots/status top_offenders = %+v, want GPTBot with a refusal", st.Handlers[0].TopOffenders)
		}
		// The counters the dashboard reads are on the admin /metrics.
		metrics := ex.adminGet("/metrics")
		if want := `caddy_robots_decisions_total{action="block",category="ai-training",mode="enforce",reason="rule",site="`; !hasSeries(metrics, want, " 1") {
			t.Errorf("admin /metrics lacks %s<the site block>\"} 1", want)
		}
	})

	t.Run("handle-errors", func(t *testing.T) {
		ex := startExample(t, "examples/handle-errors/Caddyfile", nil)
		ex.get("", "/robots.txt", gptbotUA, 200, "User-agent: GPTBot")
		// The page of handle_errors, with the refusal's status.
		ex.get("", "/", gptbotUA, 403, "403: GPTBot was refused by Disallow: / (line 6) of User-agent: GPTBot (line 5). See /robots.txt.")
		ex.get("", "/about.html", chromeUA, 200)
	})

	t.Run("json", func(t *testing.T) {
		// PORT and CADDY_ADMIN from the test win over the env file.
		ex := startExample(t, "examples/json/caddy.json", nil, "--envfile", "examples/json/defaults.env")
		ex.get("", "/robots.txt", gptbotUA, 200, "User-agent: GPTBot")
		ex.get("", "/", gptbotUA, 403, "Rule: Disallow: / (line 6)")
		ex.get("", "/private/", chromeUA, 200)
	})

	t.Run("static", func(t *testing.T) {
		ex := startExample(t, "examples/static/Caddyfile", []string{"SITE=http://localhost:{port}", "ROOT=examples/site"})
		ex.get("", "/robots.txt", gptbotUA, 200, "User-agent: GPTBot")
		// mode log: decided and counted, never refused.
		ex.get("", "/", gptbotUA, 200)
		if st := ex.status(); st.Handlers[0].Mode != "log" {
			t.Errorf("mode %q, want log", st.Handlers[0].Mode)
		}
		if want := `caddy_robots_decisions_total{action="block",category="ai-training",mode="log",reason="rule",site="`; !hasSeries(ex.adminGet("/metrics"), want, " 1") {
			t.Errorf("admin /metrics lacks %s<the site block>\"} 1", want)
		}
	})

	t.Run("reverse-proxy", func(t *testing.T) {
		host := "examples-rp.localhost"
		backend.set(host, 200, robotsTxtWithPrivate)
		ex := startExample(t, "examples/reverse-proxy/Caddyfile",
			[]string{"SITE=http://" + host + ":{port}", "UPSTREAM=" + backend.addr})
		ex.get(host, "/robots.txt", exampleUA, 200, "Disallow: /private/")
		ex.get(host, "/private/x", exampleUA, 403, "Rule: Disallow: /private/ (line 2)")
		ex.get(host, "/public", exampleUA, 200, "app:/public")
		ex.get(host, "/private/x", chromeUA, 200, "app:/private/x")
	})

	t.Run("redis", func(t *testing.T) {
		r := needRedis(t)
		host := "examples-redis.localhost"
		backend.set(host, 200, robotsTxtWithPrivate)
		ex := startExample(t, "examples/redis/Caddyfile",
			[]string{"SITE=http://" + host + ":{port}", "UPSTREAM=" + backend.addr, "ROBOTS_REDIS_URL=" + r.url()})
		ex.get(host, "/robots.txt", exampleUA, 200, "Disallow: /private/")
		ex.get(host, "/private/x", exampleUA, 403, "Rule: Disallow: /private/ (line 2)")
		ex.get(host, "/public", exampleUA, 200, "app:/public")
		if st := ex.status(); st.Handlers[0].Store.Type != "redis" || !st.Handlers[0].Store.Healthy {
			t.Errorf("store %+v, want a healthy redis store", st.Handlers[0].Store)
		}
	})

	// Every example is covered above: a new one needs its case.
	covered := map[string]bool{"Caddyfile.example": true}
	for _, name := range []string{"handle-errors", "json", "static", "reverse-proxy", "redis"} {
		covered["examples/"+name] = true
	}
	entries, err := os.ReadDir(repoPath("examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := "examples/" + e.Name()
		// No config to run: the dashboard is checked by grafana_test.go,
		// the alert rules by TestAlertRules (promtool).
		if !e.IsDir() || covered[p] || e.Name() == "site" || e.Name() == "grafana" || e.Name() == "prometheus" {
			continue
		}
		t.Errorf("%s has no case in TestExamplesRun", p)
	}
}
