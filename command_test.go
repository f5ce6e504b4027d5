package caddyrobots

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

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
