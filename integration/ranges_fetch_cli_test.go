package integration

import (
	"strings"
	"testing"
)

// TestRangesFetchRegistered: `caddy robots ranges fetch` is a command of
// the real binary, listed by `caddy robots --help`, and refuses to run
// without --out (exit 1, before any download). The downloads themselves
// are tested in internal/cli against a local stand-in for the publishers.
func TestRangesFetchRegistered(t *testing.T) {
	bin := caddyBinary(t)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"robots", "--help"}, 0, "ranges fetch --out <dir>"},
		{[]string{"robots", "ranges", "fetch", "--help"}, 0, "ranges_dir"},
		{[]string{"robots", "ranges", "fetch"}, 1, ""},
	} {
		code, stdout, stderr := runCaddy(t, bin, tc.args...)
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("caddy %s: exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stdout.String(), stderr.String())
		}
		if tc.code == 1 && !strings.Contains(stderr.String(), "--out <dir> is required") {
			t.Errorf("caddy %s: stderr does not say --out is required:\n%s", strings.Join(tc.args, " "), stderr.String())
		}
	}
}
