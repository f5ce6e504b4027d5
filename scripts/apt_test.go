//go:build linux

package scripts

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeAptGet records each call's arguments, one line per call, in the file
// $RECORD; with $FAIL_ONCE set its first call fails as apt-get does when
// another process took the lock first.
const fakeAptGet = `#!/bin/sh
echo "$*" >>"$RECORD"
if [ -n "${FAIL_ONCE:-}" ] && [ ! -e "$RECORD.failed" ]; then
  : >"$RECORD.failed"
  echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (dpkg)" >&2
  echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
  exit 100
fi
`

// aptRun is scripts/apt.sh's apt_install running against a fake apt-get
// and a lock file of the test's.
type aptRun struct {
	cmd    *exec.Cmd
	lines  chan string // its stderr, line by line; closed at its end
	record string      // the fake apt-get's record of its calls
	lock   string
	begin  time.Time
}

// startApt runs `apt_install redis-server` as the need-*.sh scripts do
// (set -euo pipefail), with APT_LOCK_WAIT wait seconds and a report every
// second.
func startApt(t *testing.T, lock string, wait int, env ...string) *aptRun {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, "apt-get")
	if err := os.WriteFile(fake, []byte(fakeAptGet), 0o755); err != nil {
		t.Fatal(err)
	}
	apt, err := filepath.Abs("apt.sh")
	if err != nil {
		t.Fatal(err)
	}
	r := &aptRun{lines: make(chan string, 100), record: filepath.Join(dir, "record"), lock: lock, begin: time.Now()}
	r.cmd = exec.Command("bash", "-c", `set -euo pipefail; . "$1"; apt_install redis-server`, "bash", apt)
	r.cmd.Env = append(os.Environ(),
		"APT_GET="+fake,
		// A file that does not exist is no lock.
		"APT_LOCKS="+filepath.Join(dir, "absent")+" "+lock,
		fmt.Sprint("APT_LOCK_WAIT=", wait),
		"APT_LOCK_REPORT=1",
		"RECORD="+r.record)
	r.cmd.Env = append(r.cmd.Env, env...)
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	return r
}

// expect returns the next stderr line that contains want, failing the test
// if none comes within a minute.
func (r *aptRun) expect(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(time.Minute)
	var seen []string
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("apt_install ended without saying %q; it said:\n%s", want, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("apt_install did not say %q within a minute; it said:\n%s", want, strings.Join(seen, "\n"))
		}
	}
}

// wait waits for the script's end and the rest of its stderr.
func (r *aptRun) wait() (string, error) {
	var rest []string
	for l := range r.lines {
		rest = append(rest, l)
	}
	return strings.Join(rest, "\n"), r.cmd.Wait()
}

// calls returns the fake apt-get's calls, nil if none.
func (r *aptRun) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(r.record)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// holdFcntl takes the POSIX write lock that apt and dpkg take on file and
// returns its release.
func holdFcntl(t *testing.T, file string) func() {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatalf("locking %s: %v", file, err)
	}
	return func() { f.Close() }
}

// holdFlock runs flock(1) holding file until the returned release, and
// returns its pid.
func holdFlock(t *testing.T, file string) (int, func()) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Fatalf("flock(1) is needed (util-linux): %v", err)
	}
	// -o: the lock stays with flock itself, not with cat, which ends when
	// its input closes.
	cmd := exec.Command("flock", "-o", file, "sh", "-c", "echo locked; exec cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "locked\n" {
		t.Fatalf("flock: %q %v", l, err)
	}
	release := func() {
		in.Close()
		_ = cmd.Wait()
	}
	t.Cleanup(release)
	return cmd.Process.Pid, release
}

// TestAptWaitsForTheLock: while another process holds the package
// system's lock (the POSIX lock apt and dpkg take, or a flock), apt_install
// does not run apt-get; it says every second (APT_LOCK_REPORT) that it
// waits, naming the lock and the process; once the lock is released it
// runs apt-get, giving it a lock timeout of its own.
func TestAptWaitsForTheLock(t *testing.T) {
	t.Parallel()
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"fcntl", "flock"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "lock-frontend")
			var holder string
			var release func()
			if kind == "fcntl" {
				release = holdFcntl(t, lock)
				holder = fmt.Sprintf("%s, held by process %d (%s)", lock, os.Getpid(), strings.TrimSpace(string(comm)))
			} else {
				pid, rel := holdFlock(t, lock)
				release = rel
				holder = fmt.Sprintf("%s, held by process %d (flock)", lock, pid)
			}
			r := startApt(t, lock, 600)
			first := r.expect(t, "apt: waiting for the package system's lock")
			if !strings.HasSuffix(first, "of at most 600s): "+holder) {
				t.Fatalf("first waiting line %q does not name %q", first, holder)
			}
			r.expect(t, "apt: waiting for the package system's lock")
			if calls := r.calls(t); calls != nil {
				t.Fatalf("apt-get ran while the lock was held: %q", calls)
			}
			release()
			rest, err := r.wait()
			if err != nil {
				t.Fatalf("apt_install after the lock was released: %v\n%s", err, rest)
			}
			want := []string{"-o DPkg::Lock::Timeout=1 update -qq", "-o DPkg::Lock::Timeout=1 install -y -qq redis-server"}
			if got := r.calls(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("apt-get calls %q, want %q", got, want)
			}
		})
	}
}

// TestAptGivesUp: a lock held for longer than APT_LOCK_WAIT ends
// apt_install with an error naming the lock and its holder, after that
// long and without running apt-get.
func TestAptGivesUp(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "lock")
	defer holdFcntl(t, lock)()
	r := startApt(t, lock, 2)
	rest, err := r.wait()
	took := time.Since(r.begin)
	if err == nil {
		t.Fatalf("apt_install succeeded under a held lock:\n%s", rest)
	}
	want := fmt.Sprintf("apt: gave up after 2s waiting for the package system's lock: %s, held by process %d", lock, os.Getpid())
	if !strings.Contains(rest, want) || !strings.Contains(rest, "then run make deps again") {
		t.Fatalf("stderr lacks %q:\n%s", want, rest)
	}
	if took < 2*time.Second {
		t.Fatalf("gave up after %v, before the 2 s it was given", took)
	}
	if calls := r.calls(t); calls != nil {
		t.Fatalf("apt-get ran while the lock was held: %q", calls)
	}
}

// TestAptRetriesWhenAnotherTakesTheLockFirst: when apt-get itself reports
// the lock taken (another process took it between the check and the call,
// or apt-get update's lists lock), apt_install says so in apt-get's words
// and runs it again.
func TestAptRetriesWhenAnotherTakesTheLockFirst(t *testing.T) {
	t.Parallel()
	r := startApt(t, filepath.Join(t.TempDir(), "lock"), 600, "FAIL_ONCE=1")
	l := r.expect(t, "apt: waiting for the package system's lock")
	if !strings.HasSuffix(l, "Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (dpkg)") {
		t.Fatalf("waiting line %q does not give apt-get's reason", l)
	}
	rest, err := r.wait()
	if err != nil {
		t.Fatalf("apt_install: %v\n%s", err, rest)
	}
	if calls := r.calls(t); len(calls) != 3 || calls[0] != calls[1] || !strings.HasSuffix(calls[2], "install -y -qq redis-server") {
		t.Fatalf("apt-get calls %q, want update twice, then install", calls)
	}
}
