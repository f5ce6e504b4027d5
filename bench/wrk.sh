#!/usr/bin/env bash
# End-to-end throughput: the demo site served by Caddy with and without the
# robots directive, under browser traffic and under bot traffic, in one run.
# Rounds alternate between the two configs so machine noise hits both alike;
# the median requests/s of each cell is reported with the ratio.
#
#   bench/wrk.sh                  # defaults: 5 rounds x 5 s, 2 threads, 32 connections
#   ROUNDS=9 DURATION=10s bench/wrk.sh
#
# Needs wrk (apt-get install wrk). Only loopback is used.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-32}
PORT_ON=${PORT_ON:-18081}
PORT_OFF=${PORT_OFF:-18082}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/caddy" ./cmd/caddy

site=$(pwd)/examples/site
cat > "$work/Caddyfile" <<CFG
{
	admin off
	auto_https off
	persist_config off
}
:$PORT_ON {
	root * $site
	robots {
		# bots are judged on every request (strikes on, as by default) but
		# never throttled here, so both configs serve the same 200 responses
		crawl_delay off
	}
	file_server
}
:$PORT_OFF {
	root * $site
	file_server
}
CFG
"$work/caddy" run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy.log" 2>&1 &
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$PORT_OFF/about.html" && break; sleep 0.2; done

browser='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
bot='ExampleCrawler/1.0 (+https://example.com/bot)'
# sanity: both answer 200 for both kinds of traffic
for port in $PORT_ON $PORT_OFF; do
  for ua in "$browser" "$bot"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -A "$ua" "http://127.0.0.1:$port/about.html")
    [ "$code" = 200 ] || { echo "port $port, UA $ua: status $code, want 200" >&2; exit 1; }
  done
done

run() { # port ua -> requests/s
  wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -H "User-Agent: $2" "http://127.0.0.1:$1/about.html" |
    awk '/Requests\/sec/ {print $2}'
}
declare -A res ratios
for r in $(seq "$ROUNDS"); do
  # alternate which config goes first, so drift over time favours neither
  order="off on"; [ $((r % 2)) = 0 ] && order="on off"
  for kind in browser bot; do
    ua=$browser; [ "$kind" = bot ] && ua=$bot
    declare -A this=()
    for cfg in $order; do
      port=$PORT_OFF; [ "$cfg" = on ] && port=$PORT_ON
      this[$cfg]=$(run "$port" "$ua")
      res[$kind-$cfg]+="${this[$cfg]} "
    done
    ratios[$kind]+="$(echo "${this[on]} ${this[off]}" | awk '{print 100*$1/$2}') "
  done
  echo "round $r/$ROUNDS done" >&2
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf '%-8s %14s %14s %12s\n' traffic "without req/s" "with req/s" "paired ratio"
for kind in browser bot; do
  off=$(echo "${res[$kind-off]}" | median); on=$(echo "${res[$kind-on]}" | median)
  ratio=$(echo "${ratios[$kind]}" | median)
  printf '%-8s %14.0f %14.0f %11.1f%%\n' "$kind" "$off" "$on" "$ratio"
done
echo "(medians of $ROUNDS rounds of $DURATION, wrk -t$THREADS -c$CONNS, GET /about.html;"
echo " paired ratio = median over rounds of with/without measured back to back)"
