#!/usr/bin/env bash
# Makes sure a Chromium is on PATH: TestAuditHTMLInChromium renders the
# `caddy robots audit --format html` report in headless Chromium at a phone's
# size, and fails under CI=true when none is found. Installs Debian's
# chromium package with apt-get when missing and running as root; otherwise
# says exactly what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then exit 0; fi
done
if can_apt; then
  echo "chromium missing: installing it with apt-get" >&2
  apt_install chromium
  command -v chromium >/dev/null && exit 0
fi
echo "chromium is required for the HTML report test: install it (Debian: apt-get install chromium; Ubuntu: snap install chromium; macOS: brew install --cask chromium)" >&2
exit 1
