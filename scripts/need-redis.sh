#!/usr/bin/env bash
# Makes sure redis-server and redis-cli are on PATH: the state and integration
# tests start a real redis-server on a free loopback port, and the cluster test
# joins six of them into a Redis Cluster with redis-cli --cluster create.
# Installs them with apt-get when missing and running as root; otherwise says
# exactly what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
have() { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; }
if have; then exit 0; fi
if can_apt; then
  echo "redis-server or redis-cli missing: installing them with apt-get" >&2
  # redis-tools holds redis-cli (redis-server depends on it; named for clarity).
  apt_install redis-server redis-tools
  # The package starts a system service on :6379; the tests run their own.
  (service redis-server stop || systemctl stop redis-server || true) >/dev/null 2>&1
  have && exit 0
fi
echo "redis-server and redis-cli are required for the tests: install them (Debian/Ubuntu: apt-get install redis-server redis-tools; macOS: brew install redis)" >&2
exit 1
