package caddyrobots

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runCLI runs "caddy robots args..." in-process, as caddycmd would, and
// returns the exit code the command chose, its output and the error cobra
// returned.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string, err error) {
	t.Helper()
	root := &cobra.Command{Use: "caddy", SilenceUsage: true}
	robots := &cobra.Command{Use: "robots"}
	code = -1
	addRobotsCommands(robots, func(c int) { code = c })
	root.AddCommand(robots)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"robots"}, args...))
	err = root.Execute()
	if code == -1 && err != nil {
		code = 1 // cobra refused the arguments: caddycmd.Main exits 1
	}
	return code, out.String(), errOut.String(), err
}

// golden compares got with testdata/cli/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "cli", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
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
	if code != exitRefused || err == nil {
		t.Errorf("GPTBot on a URL robots.txt: code %d err %v\n%s", code, err, out)
	}
	code, out, _, _ = runCLI(t, "check", "--robots", srv.URL+"/gone/robots.txt", "--agent", "GPTBot/1.2", "/x")
	if code != exitOK || !strings.Contains(out, "404 Not Found: no rules") {
		t.Errorf("404 robots.txt: code %d\n%s", code, out)
	}
	// A robots.txt that answers 5xx is unavailable: the handler refuses
	// crawlers (503) until it obtains a copy, unless unavailable allow.
	code, out, _, _ = runCLI(t, "check", "--robots", srv.URL+"/down/robots.txt", "--agent", "GPTBot/1.2", "/x")
	if code != exitRefused || !strings.Contains(out, "503 Service Unavailable: unavailable") || !strings.Contains(out, "/x: refused (this site's /robots.txt cannot be read right now") {
		t.Errorf("503 robots.txt: code %d\n%s", code, out)
	}
	code, out, _, _ = runCLI(t, "check", "--robots", srv.URL+"/down/robots.txt", "--unavailable", "allow", "--agent", "GPTBot/1.2", "/x")
	if code != exitOK || !strings.Contains(out, "/x: allowed") {
		t.Errorf("503 robots.txt, unavailable allow: code %d\n%s", code, out)
	}
}

// TestCheckExitCodeReachesShell builds cmd/caddy once and runs
// "caddy robots check" as a subprocess: a refusal must exit 3, an allowed
// URL 0 and a usage error 1, as the shell sees them.
func TestCheckExitCodeReachesShell(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/caddy")
	}
	bin := filepath.Join(t.TempDir(), "caddy")
	build := exec.Command("go", "build", "-o", bin, "./cmd/caddy")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/caddy: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"robots", "check", "--robots", "testdata/cli/site.robots.txt", "--agent", "GPTBot/1.2", "/blog/"}, 3, "/blog/: disallowed"},
		{[]string{"robots", "check", "--robots", "testdata/cli/site.robots.txt", "--agent", "GPTBot/1.2", "/robots.txt"}, 0, "/robots.txt: allowed"},
		{[]string{"robots", "check", "--robots", "testdata/cli/missing.txt", "--agent", "GPTBot/1.2", "/"}, 1, ""},
		{[]string{"robots", "lint", "testdata/cli/lint.robots.txt"}, 1, "misspelt-key"},
		{[]string{"robots", "--help"}, 0, "audit"},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("caddy %s: exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stdout.String(), stderr.String())
		}
		if tc.code == 3 && strings.Contains(stderr.String(), "Error:") {
			t.Errorf("a refusal should not print an error:\n%s", stderr.String())
		}
		// Lint's findings are its report: the exit code carries the
		// result, and no error line follows it.
		if tc.args[1] == "lint" && stderr.Len() > 0 {
			t.Errorf("lint printed after its report:\n%s", stderr.String())
		}
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
