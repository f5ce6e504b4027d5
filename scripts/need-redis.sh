#!/usr/bin/env bash
# Makes sure redis-server is on PATH: the state and integration tests start a
# real one on a free loopback port. Installs it with apt-get when missing and
# running as root; otherwise says exactly what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
if can_apt; then
  echo "redis-server missing: installing it with apt-get" >&2
  apt_install redis-server
  # The package starts a system service on :6379; the tests run their own.
  (service redis-server stop || systemctl stop redis-server || true) >/dev/null 2>&1
  command -v redis-server >/dev/null && exit 0
fi
echo "redis-server is required for the tests: install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)" >&2
exit 1
