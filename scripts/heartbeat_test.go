// Package scripts holds the tests of the shell scripts beside them, which
// make test runs: apt.sh (waiting for the package system's lock),
// heartbeat.sh (no silent step) and unit.sh (the tests through gotestsum).
package scripts

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestHeartbeat: heartbeat.sh says what runs when it starts and then every
// HEARTBEAT_EVERY seconds while it runs, passes the command's output
// through and exits with its status.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("./heartbeat.sh", "vet: checking 3 packages", "sh", "-c", "echo out; sleep 3; echo err >&2; exit 7")
	cmd.Env = append(cmd.Environ(), "HEARTBEAT_EVERY=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("exit: %v, want the command's status 7\n%s", err, stderr.String())
	}
	if stdout.String() != "out\n" {
		t.Errorf("stdout %q, want the command's", stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if lines[0] != "vet: checking 3 packages…" {
		t.Fatalf("stderr does not start with the label:\n%s", stderr.String())
	}
	beat := regexp.MustCompile(`^vet: checking 3 packages… \(\d+ s\)$`)
	beats, errs := 0, 0
	for _, l := range lines[1:] {
		if l == "err" { // the command's own
			errs++
			continue
		}
		if !beat.MatchString(l) {
			t.Fatalf("unexpected line %q in:\n%s", l, stderr.String())
		}
		beats++
	}
	// A 3-second command and a beat each second: at least two.
	if errs != 1 || beats < 2 {
		t.Fatalf("%d heartbeats during a 3 s command at one a second:\n%s", beats, stderr.String())
	}
}

// TestHeartbeatSourced: sourced under set -e, as scripts/apt.sh does, the
// heartbeat function runs a shell function and returns its status rather
// than ending the script.
func TestHeartbeatSourced(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("bash", "-c", `set -euo pipefail
. ./heartbeat.sh
f() { echo "f $*"; return 3; }
rc=0
heartbeat "running f" f a b || rc=$?
echo "rc=$rc"`).CombinedOutput()
	if err != nil || string(out) != "running f…\nf a b\nrc=3\n" {
		t.Fatalf("%v:\n%s", err, out)
	}
}
