#!/usr/bin/env bash
# Makes sure the real crawlers of integration/crawlers_test.go (wget, wget2,
# httrack) are on PATH. Installs the missing ones with apt-get when running
# as root; otherwise says exactly what to install.
set -euo pipefail
missing=()
for bin in wget wget2 httrack; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "crawlers missing (${missing[*]}): installing them with apt-get" >&2
  apt-get update -qq >/dev/null
  # The Debian package names are the binary names.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  still=()
  for bin in "${missing[@]}"; do
    command -v "$bin" >/dev/null 2>&1 || still+=("$bin")
  done
  [ ${#still[@]} -eq 0 ] && exit 0
  missing=("${still[@]}")
fi
echo "the real-crawler tests need: ${missing[*]} (Debian/Ubuntu: apt-get install ${missing[*]}; macOS: brew install ${missing[*]})" >&2
exit 1
