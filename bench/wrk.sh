#!/usr/bin/env bash
# End-to-end throughput: the demo site served by one Caddy process with and
# without the robots directive (two ports, same files), under browser traffic
# and under bot traffic, in one run.
#
# Two figures per kind of traffic:
#   throughput ratio  requests/s with / without, as wrk sees them;
#   capacity ratio    Caddy's CPU time per request without / with, read from
#                     /proc (the CPU the process actually spent, so time
#                     stolen by the hypervisor or spent in wrk does not count).
# Both swing by ±10% from one second to the next on a shared VM (the
# hypervisor steals 5-25% of the CPU in bursts), so medians over many rounds
# are reported, and ON_DIRECTIVE=' ' (an A/A run: both sites identical) shows
# the noise floor on your machine.
#
# A third figure does not depend on that noise: a CPU profile of the site with
# the directive, taken through Caddy's admin endpoint under the same load,
# gives the share of Caddy's CPU spent inside the robots handler (not in the
# handlers after it), plus the garbage collection its allocations cause
# (bench/handler-share.awk). The site without the directive does not run that
# code, so 100% minus that share estimates the throughput ratio.
#
# Each round runs without, with, with, without (ABBA), so a drift that is
# linear over the round cancels out of the round's ratio. Medians over the
# rounds are reported, with quartiles for the spread, then the mean
# throughput ratio with its 95% confidence interval: how far the run places
# the ratio (on a noisy VM one round's SD is ~6 points, so 40 rounds place
# it to about ±2%, 240 rounds to under ±1%).
#
# With --https, the same site is served over HTTPS (tls internal; wrk does not
# verify certificates) on both ports, with the directive on both, and what
# differs is the robots_fingerprint listener wrapper (issue 32): "without" is
# the site without it, "with" the site with it. Its cost is per connection
# (it reads each ClientHello and computes its JA4; a request only reads it
# from the context), so besides wrk's keep-alive connections, browser-new and
# bot-new open a new TLS connection for every request (Connection: close:
# Caddy closes after the response and wrk reconnects, with a full
# handshake). wrk's handshake is OpenSSL's, which the tls signal would take
# for a script claiming Chrome; a real browser's handshake is told apart
# once per connection and then skips the signal, so by default both sites
# turn the signal off (ON_DIRECTIVE) and the browser traffic takes the path
# a browser's requests take. The profile is of the site with the wrapper
# under new connections: the share of Caddy's CPU in the wrapper's own work
# and in the TLS handshakes it runs inside.
#
#   bench/wrk.sh                      # 40 rounds, 1 s per run, wrk -t2 -c32 (~6 min)
#   bench/wrk.sh --https              # the wrapper's cost over HTTPS (~12 min)
#   ROUNDS=60 bench/wrk.sh
#   MIN_RATIO=97 bench/wrk.sh         # exit 1 if a median ratio is below 97%
#   PROFILE_OUT=/tmp/p bench/wrk.sh   # keep the CPU and alloc profiles and the binary
#   ON_WRAPPERS=tls bench/wrk.sh --https # A/A: neither site has the wrapper
#
# Needs wrk (apt-get install wrk) and Linux /proc. Only loopback is used.
set -euo pipefail
cd "$(dirname "$0")/.."
HTTPS=0
case "$*" in
  "") ;;
  --https) HTTPS=1 ;;
  *) echo "usage: bench/wrk.sh [--https]" >&2; exit 2 ;;
esac
# Many short rounds beat a few long ones here: the drift on a shared VM is
# large over seconds, and a round's ABBA only cancels the linear part of it.
ROUNDS=${ROUNDS:-40}
DURATION=${DURATION:-1s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-32}
PORT_ON=${PORT_ON:-18081}
PORT_OFF=${PORT_OFF:-18082}
MIN_RATIO=${MIN_RATIO:-}
PROFILE_SECONDS=${PROFILE_SECONDS:-15} # 0: skip the profile
ADMIN_PORT=${ADMIN_PORT:-12019}
# ON_DIRECTIVE is what the "with" site adds (with --https: what both sites
# carry). By default bots are judged on every request (strikes on, as by
# default) but never throttled, so both sites serve the same 200 responses;
# with --https the tls signal is off (see above).
if [ "$HTTPS" = 1 ]; then
  ON_DIRECTIVE=${ON_DIRECTIVE:-'robots {
		crawl_delay off
		undeclared {
			tls off
		}
	}'}
else
  ON_DIRECTIVE=${ON_DIRECTIVE:-'robots {
		crawl_delay off
	}'}
fi
# ON_WRAPPERS: the listener wrappers of the "with" site's server (--https).
ON_WRAPPERS=${ON_WRAPPERS:-$'robots_fingerprint\n\t\t\ttls'}
./scripts/need-wrk.sh
# Never download the operators' IP lists during a benchmark: loopback only.
export CADDY_ROBOTS_RANGES_OPERATORS=off

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/caddy" ./cmd/caddy

site=$(pwd)/examples/site
if [ "$HTTPS" = 1 ]; then
  # Both sites over HTTPS with the directive; only the "with" site's server
  # has the wrapper. /tls-fingerprint answers the connection's JA4 (empty or
  # the placeholder itself without the wrapper), for the checks below; it
  # is the same route on both sites, and wrk never asks for it.
  scheme=https host=localhost
  https_site() { # port
    cat <<SITE
localhost:$1 {
	tls internal
	root * $site
	$ON_DIRECTIVE
	respond /tls-fingerprint "{http.robots.tls_fingerprint}"
	file_server
}
SITE
  }
  cat > "$work/Caddyfile" <<CFG
{
	admin localhost:$ADMIN_PORT
	auto_https disable_redirects
	skip_install_trust
	storage file_system $work/storage
	persist_config off
	servers :$PORT_ON {
		listener_wrappers {
			$ON_WRAPPERS
		}
	}
}
$(https_site "$PORT_ON")
$(https_site "$PORT_OFF")
CFG
else
  scheme=http host=127.0.0.1
  cat > "$work/Caddyfile" <<CFG
{
	admin localhost:$ADMIN_PORT
	auto_https off
	persist_config off
}
:$PORT_ON {
	root * $site
	$ON_DIRECTIVE
	file_server
}
:$PORT_OFF {
	root * $site
	file_server
}
CFG
fi
url() { echo "$scheme://$host:$1${2:-/about.html}"; } # port [path]
"$work/caddy" run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy.log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -fsk -o /dev/null "$(url "$PORT_OFF")" && curl -fsk -o /dev/null "$(url "$PORT_ON")" && break; sleep 0.2; done

browser='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
bot='ExampleCrawler/1.0 (+https://example.com/bot)'
# What Chrome sends to a secure origin (127.0.0.1 is one) for a navigation:
# Fetch Metadata and its client hints. Without them the browser traffic is
# a script wearing Chrome's name, which the directive judges as a crawler
# (see docs/configuration.md, "Undeclared crawlers and the trap").
browser_headers=(
  -H 'Sec-CH-UA: "Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"'
  -H 'Sec-CH-UA-Mobile: ?0' -H 'Sec-CH-UA-Platform: "Windows"'
  -H 'Sec-Fetch-Site: none' -H 'Sec-Fetch-Mode: navigate' -H 'Sec-Fetch-User: ?1'
  -H 'Sec-Fetch-Dest: document' -H 'Upgrade-Insecure-Requests: 1'
)
# The kinds of traffic: a browser's and a crawler's, and with --https the
# same over a new connection per request.
kinds=(browser bot)
[ "$HTTPS" = 1 ] && kinds+=(browser-new bot-new)
kw=7; [ "$HTTPS" = 1 ] && kw=11 # the kind column's width
ua_of() { # kind -> its User-Agent
  case $1 in browser*) echo "$browser" ;; *) echo "$bot" ;; esac
}
headers_for() { # kind -> the headers its traffic carries besides User-Agent
  case $1 in browser*) printf '%s\n' "${browser_headers[@]}" ;; esac
  case $1 in *-new) echo -H; echo 'Connection: close' ;; esac
}
# sanity: both answer 200 for both kinds of traffic, and the browser traffic
# is a person's: never judged, so it reads what robots.txt disallows.
for port in $PORT_ON $PORT_OFF; do
  for kind in browser bot; do
    mapfile -t hs < <(headers_for "$kind")
    code=$(curl -sk -o /dev/null -w '%{http_code}' -A "$(ua_of "$kind")" "${hs[@]}" "$(url "$port")")
    [ "$code" = 200 ] || { echo "port $port, $kind traffic: status $code, want 200" >&2; exit 1; }
  done
  [ "$HTTPS" = 1 ] || [ "$port" = "$PORT_ON" ] || continue # without the directive nothing is judged
  code=$(curl -sk -o /dev/null -w '%{http_code}' -A "$browser" "${browser_headers[@]}" "$(url "$port" /private/)")
  [ "$code" != 403 ] || { echo "port $port: the browser traffic was judged as a crawler (403 on /private/): its headers are not a browser's" >&2; exit 1; }
done
# With --https, the wrapper is what differs: the "with" site's connections
# carry a JA4 (unless ON_WRAPPERS leaves it out), the other's none.
if [ "$HTTPS" = 1 ]; then
  ja4='^t1[0-3][di][0-9]{4}[0-9a-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$'
  for port in $PORT_ON $PORT_OFF; do
    fp=$(curl -fsk -A "$browser" "${browser_headers[@]}" "$(url "$port" /tls-fingerprint)")
    want=1; { [ "$port" = "$PORT_OFF" ] || [[ $ON_WRAPPERS != *robots_fingerprint* ]]; } && want=0
    got=0; [[ $fp =~ $ja4 ]] && got=1
    [ "$got" = "$want" ] || { echo "port $port: TLS fingerprint \"$fp\", want $([ "$want" = 1 ] && echo a JA4 || echo none)" >&2; exit 1; }
  done
fi

# Caddy's CPU time so far, in clock ticks (user + system, all threads, live
# and exited).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
TICK=$(getconf CLK_TCK)

run() { # port kind -> "requests/s cpu-µs-per-request"
  local before after out
  before=$(cpu_ticks)
  mapfile -t hs < <(headers_for "$2")
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -H "User-Agent: $(ua_of "$2")" "${hs[@]}" "$(url "$1")")
  after=$(cpu_ticks)
  # A run with errors or non-2xx answers measured something else: said on
  # stderr, with the run.
  if grep -qE 'Socket errors|Non-2xx' <<<"$out"; then
    echo "wrk on port $1, $2 traffic: $(grep -E 'Socket errors|Non-2xx' <<<"$out" | tr -s ' \n' ' ')" >&2
  fi
  echo "$out" | awk -v t="$((after - before))" -v hz="$TICK" '
    /requests in/ {n=$1} /Requests\/sec/ {rps=$2}
    END {printf "%s %.3f\n", rps, t*1e6/hz/n}'
}

declare -A rps cpu tput_ratios cap_ratios
DURATION_MAIN=$DURATION; DURATION=1s
for kind in "${kinds[@]}"; do run "$PORT_OFF" "$kind" >/dev/null; run "$PORT_ON" "$kind" >/dev/null; done
DURATION=$DURATION_MAIN
for r in $(seq "$ROUNDS"); do
  for kind in "${kinds[@]}"; do
    read -r off1 coff1 < <(run "$PORT_OFF" "$kind")
    read -r on1 con1 < <(run "$PORT_ON" "$kind")
    read -r on2 con2 < <(run "$PORT_ON" "$kind")
    read -r off2 coff2 < <(run "$PORT_OFF" "$kind")
    read -r off on coff con tput cap < <(echo "$off1 $off2 $on1 $on2 $coff1 $coff2 $con1 $con2" | awk '{
      off=($1+$2)/2; on=($3+$4)/2; coff=($5+$6)/2; con=($7+$8)/2
      print off, on, coff, con, 100*on/off, 100*coff/con}')
    rps[$kind-off]+="$off "; rps[$kind-on]+="$on "
    cpu[$kind-off]+="$coff "; cpu[$kind-on]+="$con "
    tput_ratios[$kind]+="$tput "; cap_ratios[$kind]+="$cap "
    printf 'round %2d/%d %-*s req/s without %6.0f with %6.0f (%5.1f%%)   CPU µs/req without %5.1f with %5.1f (%5.1f%%)\n' \
      "$r" "$ROUNDS" "$kw" "$kind" "$off" "$on" "$tput" "$coff" "$con" "$cap" >&2
  done
done

# quantile q of the numbers on stdin (linear interpolation)
quantile() { tr ' ' '\n' | grep -v '^$' | sort -g | awk -v q="$1" '{a[NR]=$1} END {p=1+q*(NR-1); i=int(p); f=p-i; print (i<NR)? a[i]+f*(a[i+1]-a[i]) : a[NR]}'; }
fail=0
printf '%-*s %9s %9s %17s   %11s %11s %17s\n' "$kw" traffic "req/s w/o" "req/s with" "throughput ratio" "CPU µs w/o" "CPU µs with" "capacity ratio"
for kind in "${kinds[@]}"; do
  q() { echo "$1" | quantile "$2"; }
  t=$(q "${tput_ratios[$kind]}" 0.5); tq1=$(q "${tput_ratios[$kind]}" 0.25); tq3=$(q "${tput_ratios[$kind]}" 0.75)
  c=$(q "${cap_ratios[$kind]}" 0.5); cq1=$(q "${cap_ratios[$kind]}" 0.25); cq3=$(q "${cap_ratios[$kind]}" 0.75)
  printf '%-*s %9.0f %10.0f %6.1f%% (%4.1f–%5.1f) %11.1f %11.1f %6.1f%% (%4.1f–%5.1f)\n' "$kw" "$kind" \
    "$(q "${rps[$kind-off]}" 0.5)" "$(q "${rps[$kind-on]}" 0.5)" "$t" "$tq1" "$tq3" \
    "$(q "${cpu[$kind-off]}" 0.5)" "$(q "${cpu[$kind-on]}" 0.5)" "$c" "$cq1" "$cq3"
  if [ -n "$MIN_RATIO" ] && awk -v r="$t" -v m="$MIN_RATIO" 'BEGIN {exit !(r < m)}'; then fail=1; fi
done
if [ "$HTTPS" = 1 ]; then
  echo "($ROUNDS rounds, each without-with-with-without the robots_fingerprint wrapper for $DURATION per run;"
  echo " wrk -t$THREADS -c$CONNS GET https://localhost/about.html (tls internal, the directive on both sites);"
  echo " *-new: a new TLS connection per request; medians over rounds, quartiles in parentheses)"
else
  echo "($ROUNDS rounds, each without-with-with-without for $DURATION per run; wrk -t$THREADS -c$CONNS GET /about.html;"
  echo " medians over rounds, quartiles in parentheses)"
fi
# The mean of the rounds' throughput ratios with its 95% confidence interval
# (normal approximation): how far this run can place the true ratio.
for kind in "${kinds[@]}"; do
  echo "${tput_ratios[$kind]}" | tr ' ' '\n' | grep -v '^$' | awk -v k="$kind" -v w="$kw" '
    {n++; s+=$1; ss+=$1*$1}
    END {m=s/n; sd=(n>1)? sqrt((ss-n*m*m)/(n-1)) : 0; h=1.96*sd/sqrt(n)
         printf "%-*s mean throughput ratio %.2f%% (95%% CI %.2f–%.2f, SD per round %.1f, n=%d)\n", w, k, m, m-h, m+h, sd, n}'
done

# profile takes a CPU and an allocation profile of the "with" site under
# kind's load, into $work/cpu.prof and $work/allocs.prof (and PROFILE_OUT).
profile() { # kind
  mapfile -t hs < <(headers_for "$1")
  wrk -t"$THREADS" -c"$CONNS" -d"$((PROFILE_SECONDS + 8))s" -H "User-Agent: $(ua_of "$1")" "${hs[@]}" "$(url "$PORT_ON")" >/dev/null &
  local load=$!
  sleep 1
  curl -fsS -o "$work/cpu.prof" "http://localhost:$ADMIN_PORT/debug/pprof/profile?seconds=$PROFILE_SECONDS"
  curl -fsS -o "$work/allocs.prof" "http://localhost:$ADMIN_PORT/debug/pprof/allocs?seconds=5"
  wait "$load"
  if [ -n "${PROFILE_OUT:-}" ]; then # keep the profiles and the binary to read them with
    mkdir -p "$PROFILE_OUT" && cp "$work/cpu.prof" "$PROFILE_OUT/$1-cpu.prof" && cp "$work/allocs.prof" "$PROFILE_OUT/$1-allocs.prof" && cp "$work/caddy" "$PROFILE_OUT/caddy"
  fi
}
# share reads the profiles with a report of bench/ (handler-share.awk or
# wrapper-share.awk): its CPU line, then its allocation line.
share() { # report.awk
  go tool pprof -traces "$work/caddy" "$work/cpu.prof" 2>/dev/null | awk -f bench/pprof-traces.awk -f "bench/$1"
  go tool pprof -sample_index=alloc_space -traces "$work/caddy" "$work/allocs.prof" 2>/dev/null | awk -f bench/pprof-traces.awk -f "bench/$1"
}

if [ "$PROFILE_SECONDS" -gt 0 ] && [ "$HTTPS" = 1 ]; then
  echo
  printf '%-*s %14s %14s %12s %14s %18s\n' "$kw" traffic "wrapper CPU" "handshake CPU" "GC share" "wrapper alloc" "est. capacity"
  profile browser-new
  { read -r wcpu hs_cpu gc _; read -r walloc _; } < <(share wrapper-share.awk)
  est=$(awk -v w="$wcpu" -v g="$gc" -v a="$walloc" 'BEGIN {printf "%.1f", 100 - w - g * a / 100}')
  printf '%-*s %13.2f%% %13.2f%% %11.2f%% %13.2f%% %17s%%\n' "$kw" browser-new "$wcpu" "$hs_cpu" "$gc" "$walloc" "$est"
  echo "(CPU profile of the site with the wrapper for ${PROFILE_SECONDS}s under a new connection per request; wrapper CPU:"
  echo " reading the ClientHello, its JA4 and engine, inside the TLS handshakes (handshake CPU); est. capacity ="
  echo " 100% - wrapper CPU - GC share x wrapper's share of bytes allocated)"
elif [ "$PROFILE_SECONDS" -gt 0 ]; then
  echo
  printf '%-*s %14s %14s %12s %14s %18s\n' "$kw" traffic "handler CPU" "stack growth" "GC share" "handler alloc" "est. capacity"
  for kind in "${kinds[@]}"; do
    profile "$kind"
    { read -r hcpu hstack gc _; read -r halloc _; } < <(share handler-share.awk)
    est=$(awk -v h="$hcpu" -v g="$gc" -v a="$halloc" 'BEGIN {printf "%.1f", 100 - h - g * a / 100}')
    printf '%-*s %13.2f%% %13.2f%% %11.2f%% %13.2f%% %17s%%\n' "$kw" "$kind" "$hcpu" "$hstack" "$gc" "$halloc" "$est"
  done
  echo "(CPU profile of the site with the directive for ${PROFILE_SECONDS}s under the same wrk load; est. capacity ="
  echo " 100% - handler CPU - GC share x handler's share of bytes allocated; stack growth is paid by"
  echo " file_server instead when the directive is absent, so it is shown but not counted)"
fi
if [ "$fail" = 1 ]; then echo "a median throughput ratio is below $MIN_RATIO%" >&2; exit 1; fi
