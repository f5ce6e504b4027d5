package integration

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCheckExitCodeReachesShell runs "caddy robots check" and "lint" as
// a subprocess of the cmd/caddy binary: a refusal must exit 3, an allowed
// URL 0 and a usage error 1, as the shell sees them. (The in-process tests
// of the root package and internal/cli see the code the command chose;
// only a real binary shows that Caddy's main passes it on.)
func TestCheckExitCodeReachesShell(t *testing.T) {
	bin := caddyBinary(t)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"robots", "check", "--robots", "testdata/cli/site.robots.txt", "--agent", "GPTBot/1.2", "/blog/"}, 3, "/blog/: disallowed"},
		{[]string{"robots", "check", "--robots", "testdata/cli/site.robots.txt", "--agent", "GPTBot/1.2", "/robots.txt"}, 0, "/robots.txt: allowed"},
		{[]string{"robots", "check", "--robots", "testdata/cli/missing.txt", "--agent", "GPTBot/1.2", "/"}, 1, ""},
		{[]string{"robots", "lint", "internal/cli/testdata/cli/lint.robots.txt"}, 1, "misspelt-key"},
		{[]string{"robots", "--help"}, 0, "audit"},
	} {
		code, stdout, stderr := runCaddy(t, bin, tc.args...)
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

// runCaddy runs the binary bin with args from the repository's root and
// returns its exit status and output.
func runCaddy(t *testing.T, bin string, args ...string) (code int, stdout, stderr *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoPath(".")
	stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stdout, stderr
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stdout, stderr
}
