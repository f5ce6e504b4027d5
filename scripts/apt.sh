# Sourced by the need-*.sh scripts: how they install what a test or a
# benchmark needs on Debian or Ubuntu.
#
# apt-get fails at once while another apt-get, dpkg or unattended-upgrades
# holds the package system's lock. apt_install waits for the lock instead,
# up to APT_LOCK_WAIT seconds (600), saying every APT_LOCK_REPORT seconds
# (30) that it waits and for which process, then gives up with an error
# that names it. APT_GET (the command) and APT_LOCKS (the lock files,
# separated by spaces) are settable so that scripts/apt_test.go runs all of
# this against a fake apt-get and a lock file of its own.

# shellcheck source=scripts/heartbeat.sh
. "$(dirname "${BASH_SOURCE[0]}")/heartbeat.sh"

APT_GET=${APT_GET:-apt-get}
APT_LOCKS=${APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}
APT_LOCK_WAIT=${APT_LOCK_WAIT:-600}
APT_LOCK_REPORT=${APT_LOCK_REPORT:-30}

# can_apt reports whether packages may be installed here: running as root
# where apt-get exists.
can_apt() { [ "$(id -u)" = 0 ] && command -v "$APT_GET" >/dev/null 2>&1; }

# apt_install installs the packages named by its arguments, quietly.
apt_install() {
  apt_get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt_get install -y -qq "$@" >/dev/null
}

# apt_lock_holder prints "FILE, held by process PID (NAME)" for the first
# file of APT_LOCKS that a process holds locked, and fails when none is.
# It reads /proc/locks, which lists the POSIX locks apt and dpkg take as
# well as flock(2) locks, by device and inode.
apt_lock_holder() {
  [ -r /proc/locks ] || return 1
  local f dev ino id pid name
  for f in $APT_LOCKS; do
    dev=$(stat -c %d "$f" 2>/dev/null) || continue
    ino=$(stat -c %i "$f") || continue
    id=$(printf '%02x:%02x:%s' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino")
    # "1: POSIX  ADVISORY  WRITE 1234 fe:00:9978004 0 EOF"; a waiter's
    # line has "->" after the number, and no id in field 6.
    pid=$(awk -v id="$id" '$6 == id { print $5; exit }' /proc/locks)
    [ -n "$pid" ] || continue
    name=$(cat "/proc/$pid/comm" 2>/dev/null) || name=
    if [ "$pid" -gt 0 ] 2>/dev/null; then
      echo "$f, held by process $pid${name:+ ($name)}"
    else
      echo "$f, held by a process of another PID namespace"
    fi
    return 0
  done
  return 1
}

# apt_get runs APT_GET with its arguments once no process holds the lock,
# waiting as described above. apt-get itself is given
# -o DPkg::Lock::Timeout so that it waits too when another process takes
# the lock first; a "Could not get lock" it still reports (apt-get update's
# lists lock) is waited for and retried the same way.
apt_get() {
  local start now deadline held next=0 rc err
  start=$(date +%s)
  deadline=$((start + APT_LOCK_WAIT))
  err=$(mktemp) || return 1
  while :; do
    now=$(date +%s)
    if ! held=$(apt_lock_holder); then
      rc=0
      heartbeat "apt-get $*" apt_get_once "$err" $((deadline - now < APT_LOCK_REPORT ? (deadline > now ? deadline - now : 0) : APT_LOCK_REPORT)) "$@" || rc=$?
      if [ "$rc" = 0 ] || ! grep -qE 'Could not get lock|Unable to (acquire|lock)' "$err"; then
        cat "$err" >&2
        rm -f "$err"
        return "$rc"
      fi
      # apt-get's own words: the lock file, and who holds it.
      held=$(grep -m1 -oE '(Could not get lock|Unable to (acquire|lock)).*' "$err" || true)
      now=$(date +%s)
    fi
    # In whole seconds: past the deadline's second, at least the full wait.
    if [ "$now" -gt "$deadline" ]; then
      echo "apt: gave up after ${APT_LOCK_WAIT}s waiting for the package system's lock: $held. Let that process finish (or stop it), then run make deps again." >&2
      rm -f "$err"
      return 1
    fi
    if [ "$now" -ge "$next" ]; then
      echo "apt: waiting for the package system's lock ($((now - start))s of at most ${APT_LOCK_WAIT}s): $held" >&2
      next=$((now + APT_LOCK_REPORT))
    fi
    sleep 1
  done
}

# apt_get_once runs APT_GET once with lock timeout $2 seconds and the rest
# as arguments, its stderr to the file $1.
apt_get_once() {
  local err=$1 timeout=$2
  shift 2
  "$APT_GET" -o "DPkg::Lock::Timeout=$timeout" "$@" 2>"$err"
}
