#!/usr/bin/env bash
# Makes sure promtool is on PATH: integration/alerts_test.go checks and
# unit-tests the Prometheus alert rules in examples/prometheus with it.
# Installs it with apt-get when missing and running as root (Debian's
# prometheus package provides it); otherwise says exactly what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
if command -v promtool >/dev/null 2>&1; then exit 0; fi
if can_apt; then
  echo "promtool missing: installing the prometheus package with apt-get" >&2
  apt_install prometheus
  # The package may start a Prometheus server on :9090; the tests need
  # only promtool.
  (service prometheus stop || systemctl stop prometheus || true) >/dev/null 2>&1
  command -v promtool >/dev/null && exit 0
fi
echo "promtool is required for the alert rule tests: install it (Debian/Ubuntu: apt-get install prometheus; macOS: brew install prometheus; or the release tarball from https://prometheus.io/download/)" >&2
exit 1
