#!/usr/bin/env bash
# Makes sure the real crawlers of the integration tests are on PATH: wget,
# wget2 and httrack (integration/crawlers_test.go), and Scrapy
# (integration/crawlers_rogue_test.go, Debian's python3-scrapy, whose command
# is scrapy); integration/crawlers_rotation_test.go runs all four beside a
# urllib.robotparser crawler (python3) and a Colly crawler it builds with go
# from integration/testdata/collycrawler. Installs the missing ones with apt-get when running as root;
# otherwise says exactly what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
# command:package
crawlers=(wget:wget wget2:wget2 httrack:httrack scrapy:python3-scrapy)
missing=()
packages=()
for c in "${crawlers[@]}"; do
  bin=${c%%:*}
  command -v "$bin" >/dev/null 2>&1 || { missing+=("$bin"); packages+=("${c#*:}"); }
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if can_apt; then
  echo "crawlers missing (${missing[*]}): installing ${packages[*]} with apt-get" >&2
  apt_install "${packages[@]}"
  still=()
  for bin in "${missing[@]}"; do
    command -v "$bin" >/dev/null 2>&1 || still+=("$bin")
  done
  [ ${#still[@]} -eq 0 ] && exit 0
  missing=("${still[@]}")
fi
echo "the real-crawler tests need: ${missing[*]} (Debian/Ubuntu: apt-get install ${packages[*]}; macOS: brew install wget wget2 httrack, pip install scrapy)" >&2
exit 1
