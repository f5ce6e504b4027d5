#!/usr/bin/env bash
# Makes sure what the undeclared-crawler tests run for real is installed:
# headed Chromium and Firefox ESR under Xvfb (integration/browsers_test.go,
# with certutil to make them trust Caddy's local CA in a throwaway profile
# and ImageMagick's import for screenshots), and the scripts and text
# browser that wear a browser's User-Agent (integration/undeclared_test.go:
# lynx, links2 in graphics mode, wget, python3 with requests and Scrapy,
# all Debian's). Installs
# what is missing with apt-get when running as root; otherwise says
# exactly what to install.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have chromium || need+=(chromium)
have firefox-esr || have firefox || need+=(firefox-esr)
have Xvfb || need+=(xvfb)
have lynx || need+=(lynx)
have links2 || need+=(links2)
have wget || need+=(wget)
have curl || need+=(curl)
have certutil || need+=(libnss3-tools)
have import || need+=(imagemagick)
/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || need+=(python3-requests)
/usr/bin/python3 -c 'import scrapy' >/dev/null 2>&1 || need+=(python3-scrapy)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ -z "${NEED_BROWSERS_TRIED:-}" ] && can_apt; then
  echo "browser test tools missing (${need[*]}): installing them with apt-get" >&2
  apt_install "${need[@]}"
  NEED_BROWSERS_TRIED=1 exec "$0"
fi
echo "the undeclared-crawler tests need: ${need[*]} (Debian: apt-get install ${need[*]})" >&2
exit 1
