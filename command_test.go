package caddyrobots

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/cli"
	"github.com/caddyrobots/caddy-robots/internal/cli/clitest"
)

// runCLI runs "caddy robots args..." in-process, as caddycmd would, and
// returns the exit code the command chose, its output and the error cobra
// returned.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string, err error) {
	t.Helper()
	return clitest.Run(t, func(robots *cobra.Command, record func(int)) { cli.AddCommands(robots, cliHooks(), record) }, args...)
}

// golden compares got with testdata/cli/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	clitest.Golden(t, filepath.Join("testdata", "cli", name+".golden"), got, *update)
}

func TestCLIHelpListsCommands(t *testing.T) {
	code, out, _, err := runCLI(t, "--help")
	if err != nil || code != -1 && code != 0 {
		t.Fatalf("code %d err %v", code, err)
	}
	for _, c := range []string{"check", "lint", "audit"} {
		if !strings.Contains(out, c) {
			t.Errorf("help does not list %s:\n%s", c, out)
		}
	}
}

func TestLoadRobotsFromURL(t *testing.T) {
	body, err := os.ReadFile("testdata/cli/site.robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			w.Write(body)
		case "/gone/robots.txt":
			http.NotFound(w, r)
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	code, out, _, err := runCLI(t, "check", "--robots", srv.URL+"/robots.txt", "--agent", "GPTBot/1.2", "/", "/x")
	if code != cli.ExitRefused || err == nil {
		t.Errorf("GPTBot on a URL robots.txt: code %d err %v\n%s", code, err, out)
	}
	code, out, _, _ = runCLI(t, "check", "--robots", srv.URL+"/gone/robots.txt", "--agent", "GPTBot/1.2", "/x")
	if code != cli.ExitOK || !strings.Contains(out, "404 Not Found: no rules") {
		t.Errorf("404 robots.txt: code %d\n%s", code, out)
	}
	// A robots.txt that answers 5xx is unavailable: the handler refuses
	// crawlers (503) until it obtains a copy, unless unavailable allow.
	code, out, _, _ = runCLI(t, "check", "--robots", srv.URL+"/down/robots.txt", "--agent", "GPTBot/1.2", "/x")
	if code != cli.ExitRefused || !strings.Contains(out, "503 Service Unavailable: unavailable") || !strings.Contains(out, "/x: refused (this site's /robots.txt cannot be read right now") {
		t.Errorf("503 robots.txt: code %d\n%s", code, out)
	}
	code, out, _, _ = runCLI(t, "check", "--robots", srv.URL+"/down/robots.txt", "--unavailable", "allow", "--agent", "GPTBot/1.2", "/x")
	if code != cli.ExitOK || !strings.Contains(out, "/x: allowed") {
		t.Errorf("503 robots.txt, unavailable allow: code %d\n%s", code, out)
	}
}

func gzipFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAuditOldUndeclaredFlag: --disguised, the old name of --undeclared,
// still sets the signals' modes and says it is deprecated; giving both is
// an error naming both.
func TestAuditOldUndeclaredFlag(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "robots.txt")
	writeFile(t, robots, "User-agent: *\nDisallow: /private/\n")
	for _, c := range []struct {
		args       []string
		undeclared int64
	}{{[]string{"--undeclared", "off"}, 0}, {[]string{"--disguised", "off"}, 0}, {[]string{"--disguised", "enforce"}, 2}} {
		_, out, stderr, err := runCLI(t, append(append([]string{"audit", "--robots", siteRobots, "--format", "json"}, c.args...), multiHostLog)...)
		var r audit.Report
		if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Undeclared != c.undeclared {
			t.Errorf("%v: err %v, want %d undeclared:\n%s", c.args, err, c.undeclared, out)
		}
		if c.args[0] == "--disguised" && !strings.Contains(stderr, "--disguised is now --undeclared") {
			t.Errorf("%v: no deprecation notice on stderr: %q", c.args, stderr)
		}
	}
	code, _, _, err := runCLI(t, "audit", "--robots", robots, "--undeclared", "log", "--disguised", "off", multiHostLog)
	if code != cli.ExitFailure || err == nil || !strings.Contains(err.Error(), "--disguised and --undeclared are both given") {
		t.Errorf("both flags: code %d, err %v", code, err)
	}
}
