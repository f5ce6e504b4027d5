#!/usr/bin/env bash
# A mixed load against a real Caddy, with and without the robots directive:
# 90% browsers, 10% bots from 100,000 client addresses, 1% impostors
# claiming Googlebot, 2% random Host names on a catch-all site (bench/mixed.lua).
# The addresses reach Caddy as X-Forwarded-For from loopback, which the
# config trusts strictly, so every request is judged as a distinct client.
# Google's IP list is given as a file; nothing is downloaded. Googlebot and
# bingbot are verified by reverse DNS (their lists only confirm), here
# against a resolver that never answers (127.0.0.1:9): each claim from a new
# address costs one failed lookup, cached per address, and stays unverified
# (judged by its group and by *, as issue 11 asks).
#
# One Caddy serves both sites (same files) on two ports. The load runs in
# rounds of without, with, with, without (ABBA), so a drift of the VM's speed
# cancels out; each site gets ROUNDS*2*DURATION of load (default 2*2*15 s =
# 60 s). Reported per site: requests, socket errors, the median over its
# runs of p50/p90/p99 latency, the statuses; and Caddy's RSS every 10 s
# (flat after warm-up means bounded state).
#
#   bench/mixed.sh                     # 2 ABBA rounds of 15 s, wrk -t2 -c64 (~2.5 min)
#   ROUNDS=4 DURATION=10s bench/mixed.sh
#   PROFILE_OUT=/tmp/p bench/mixed.sh  # also keep a CPU profile of each site
#
# Needs wrk (apt-get install wrk). Only loopback is used.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-15s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
PORT_OFF=${PORT_OFF:-18090}
PORT_ON=${PORT_ON:-18091}
ADMIN_PORT=${ADMIN_PORT:-12029}
./scripts/need-wrk.sh
# Never download the operators' IP lists during a benchmark: loopback only.
export CADDY_ROBOTS_RANGES_OPERATORS=off

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/caddy" ./cmd/caddy
site=$(pwd)/examples/site
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
:$PORT_OFF {
	root * $site
	file_server
}
:$PORT_ON {
	root * $site
	robots {
		verify {
			resolver 127.0.0.1:9
			timeout 100ms
			ranges google-common $(pwd)/agents/data/ips/google/googlebot.json
		}
	}
	file_server
}
CFG
"$work/caddy" run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy.log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$PORT_OFF/about.html" && break; sleep 0.2; done

(
	while kill -0 "$pid" 2>/dev/null; do
		awk '/VmRSS/ {printf "%d ", $2/1024}' "/proc/$pid/status" 2>/dev/null || true
		sleep 10
	done
) >"$work/rss" &

load() { # $1: label, $2: port, $3: duration
	wrk -t"$THREADS" -c"$CONNS" -d"$3" --latency -s bench/mixed.lua "http://127.0.0.1:$2" | grep '^MIXED' >>"$work/$1"
}
load warmup "$PORT_OFF" 5s
load warmup "$PORT_ON" 5s
# With PROFILE_OUT set, the first run of each site is profiled for 10 s
# (from 2 s into it) and the profiles kept there with the binary.
profiled() { # $1: label, $2: port, $3: duration
	local cp=
	if [ -n "${PROFILE_OUT:-}" ] && [ ! -e "$PROFILE_OUT/$1-cpu.prof" ]; then
		mkdir -p "$PROFILE_OUT" && cp "$work/caddy" "$PROFILE_OUT/caddy"
		(sleep 2; curl -fsS -o "$PROFILE_OUT/$1-cpu.prof" "http://localhost:$ADMIN_PORT/debug/pprof/profile?seconds=10") &
		cp=$!
	fi
	load "$1" "$2" "$3"
	if [ -n "$cp" ]; then wait "$cp"; fi
}
for _ in $(seq "$ROUNDS"); do
	profiled without "$PORT_OFF" "$DURATION"
	profiled with "$PORT_ON" "$DURATION"
	load with "$PORT_ON" "$DURATION"
	load without "$PORT_OFF" "$DURATION"
done

summary() { # $1: label
	awk -v label="$1" '
		function med(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{
			n++
			for (f = 1; f <= NF; f++) {
				split($f, kv, "=")
				if (kv[1] == "requests") req += kv[2]
				if (kv[1] == "errors") err += kv[2]
				if (kv[1] == "p50_us") p50[n] = kv[2]
				if (kv[1] == "p90_us") p90[n] = kv[2]
				if (kv[1] == "p99_us") p99[n] = kv[2]
				if (kv[1] == "statuses") st = st " " substr($f, 10)
			}
		}
		END {
			printf "%s: runs=%d requests=%d socket_errors=%d median p50=%.2fms p90=%.2fms p99=%.2fms\n", label, n, req, err, med(p50, n) / 1000, med(p90, n) / 1000, med(p99, n) / 1000
			printf "%s: statuses per run:%s\n", label, st
			printf "%s P99 %d\n", label, med(p99, n) > "/dev/stderr"
		}' "$work/$1"
}
summary without 2>"$work/p99-off"
summary with 2>"$work/p99-on"
off=$(awk '{print $3}' "$work/p99-off")
on=$(awk '{print $3}' "$work/p99-on")
awk -v on="$on" -v off="$off" 'BEGIN { printf "p99 with / without: %.1f%%\n", 100 * on / off }'
echo "Caddy RSS (MiB) every 10 s, both sites: $(cat "$work/rss")"
