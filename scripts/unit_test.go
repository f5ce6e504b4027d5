//go:build linux

package scripts

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestUnitSkipUnderCI: unit.sh, run on a package with a skipped test,
// shows the counts, the skip and the tests' [report] lines; under CI=true
// the skip fails the run, elsewhere it does not.
func TestUnitSkipUnderCI(t *testing.T) {
	t.Parallel()
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command("./unit.sh")
		cmd.Env = append(cmd.Environ(), "PKGS=./scripts/testdata/skip", "CI="+ci)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case ci == "" && err != nil:
			t.Errorf("CI unset: %v\n%s", err, out)
		case ci != "" && (!errors.As(err, &exit) || exit.ExitCode() != 1):
			t.Errorf("CI=true: %v, want exit status 1\n%s", err, out)
		}
		for _, want := range []string{"DONE 2 tests, 1 skipped", "SKIP: scripts/testdata/skip TestSkips", "Reported by the tests:\n  skip fixture: 1 figure\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("CI=%q: output lacks %q:\n%s", ci, want, out)
			}
		}
		if fail := strings.Contains(string(out), "FAIL: tests were skipped under CI=true"); fail != (ci != "") {
			t.Errorf("CI=%q: failure line printed %v:\n%s", ci, fail, out)
		}
	}
}
