#!/usr/bin/env bash
# A mixed load against a real Caddy, with and without the robots directive:
# 90% browsers, 10% bots from 100,000 client addresses, 1% impostors
# claiming Googlebot, 2% random Host names on a catch-all site (bench/mixed.lua).
# The addresses reach Caddy as X-Forwarded-For from loopback, which the
# config trusts strictly, so every request is judged as a distinct client;
# verification's reverse-DNS lookups go to a closed local port (no network).
#
# Reports, for each config: requests, socket errors, p50/p90/p99 latency and
# the statuses; and Caddy's RSS every 10 s of the run with the directive
# (flat after warm-up means bounded state).
#
#   bench/mixed.sh                  # 60 s each, wrk -t2 -c64
#   DURATION=20s bench/mixed.sh
#
# Needs wrk (apt-get install wrk). Only loopback is used.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
PORT=${PORT:-18090}
ADMIN_PORT=${ADMIN_PORT:-12029}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
# Never download the operators' IP lists during a benchmark: loopback only.
export CADDY_ROBOTS_RANGES_OPERATORS=off

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/caddy" ./cmd/caddy
site=$(pwd)/examples/site

run() { # $1: label, $2: directive
	cat > "$work/Caddyfile" <<CFG
{
	admin localhost:$ADMIN_PORT
	auto_https off
	persist_config off
	storage file_system $work/data
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
}
:$PORT {
	root * $site
	$2
	file_server
}
CFG
	"$work/caddy" run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy-$1.log" 2>&1 &
	local pid=$!
	for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/about.html" && break; sleep 0.2; done
	# Warm-up, then the measured run with RSS sampled every 10 s.
	wrk -t"$THREADS" -c"$CONNS" -d5s -s bench/mixed.lua "http://127.0.0.1:$PORT" >/dev/null
	(
		while kill -0 "$pid" 2>/dev/null; do
			awk '/VmRSS/ {printf "%d ", $2/1024}' "/proc/$pid/status" 2>/dev/null || true
			sleep 10
		done
	) >"$work/rss-$1" &
	local sampler=$!
	wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s bench/mixed.lua "http://127.0.0.1:$PORT" >"$work/wrk-$1"
	kill "$sampler" 2>/dev/null || true
	echo "$1: $(grep '^MIXED' "$work/wrk-$1")"
	echo "$1: RSS MiB every 10 s: $(cat "$work/rss-$1")"
	grep -E 'Requests/sec' "$work/wrk-$1" | sed "s/^/$1: /"
	kill "$pid"; wait "$pid" 2>/dev/null || true
}

run without ""
# Google's list given as a file counts as current, as a downloaded one
# would in production: impostors are proven by the list, not by DNS.
run with "robots {
		verify {
			resolver 127.0.0.1:9
			timeout 100ms
			ranges google-common $(pwd)/agents/data/ips/google/googlebot.json
		}
	}"
