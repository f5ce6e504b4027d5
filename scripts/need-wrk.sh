#!/usr/bin/env bash
# Makes sure wrk is on PATH for make wrk and make mixed (the end-to-end
# throughput comparisons; make test does not need it). Installs it with
# apt-get when missing and running as root; otherwise says what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
if command -v wrk >/dev/null 2>&1; then exit 0; fi
if can_apt; then
  echo "wrk missing: installing it with apt-get" >&2
  apt_install wrk
  command -v wrk >/dev/null && exit 0
fi
echo "wrk is required for the throughput benchmarks: install it (Debian/Ubuntu: apt-get install wrk; macOS: brew install wrk)" >&2
exit 1
