#!/usr/bin/env bash
# report.sh writes docs/benchmarks.md: the current figures of the key Go
# benchmarks (medians of COUNT runs), of bench/wrk.sh (end-to-end
# throughput with and without the directive) and of bench/wrk.sh --https
# (with and without the robots_fingerprint listener wrapper), with the
# machine they ran on.
# The file is generated: edit this script, not the file.
#
#   make benchmarks-doc              # the same as bench/report.sh
#   COUNT=10 bench/report.sh         # more runs per Go benchmark (default 5)
#   ROUNDS=10 bench/report.sh        # a shorter wrk run (default 40; the file says so)
#   WRK=0 bench/report.sh            # Go benchmarks only (the file says so)
#   WRK_HTTPS=0 bench/report.sh      # without bench/wrk.sh --https (default: as WRK)
#   OUT=/tmp/b.md bench/report.sh    # write elsewhere
#
# On a 2-core machine the Go benchmarks take 10 to 20 minutes (the handler's
# ...Only benchmarks prepare their requests outside the timer, which costs
# wall time), bench/wrk.sh about 7 more at 40 rounds, bench/wrk.sh --https
# about 12 more, the first build of Caddy a few more. Run it on a quiet machine:
# every figure is a time, and other processes on the same cores change it
# (the load average before and after the run is written into the file).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
ROUNDS=${ROUNDS:-40}
WRK=${WRK:-1}
WRK_HTTPS=${WRK_HTTPS:-$WRK}
OUT=${OUT:-docs/benchmarks.md}
export CADDY_ROBOTS_RANGES_OPERATORS=off # loopback only

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The benchmarks reported, by package: name (without "Benchmark") and what
# it measures. A name that no longer exists is reported on stderr and left
# out of the file.
benchmarks() {
  cat <<'LIST'
.|ServeHTTPBrowser|a person's request through the handler (plain HTTP, User-Agent cached): must allocate nothing
.|ServeHTTPBrowserHTTPS|the same over HTTPS with Chrome's headers (the undeclared-crawler check runs)
.|ServeHTTPPhoneBrowser|a phone's browser whose User-Agent carries a model name (the site's groups are looked up)
.|ServeHTTPBrowserOnly|a person's fresh request, prepared ahead outside the timer
.|ServeHTTPBotAllowedOnly|an allowed crawler's fresh request, prepared ahead outside the timer: the handler's own cost
.|ServeHTTPBotAllowed|an allowed crawler's request, Caddy's request preparation included
.|ServeHTTPBotCaseInsensitive|the same with case_insensitive_paths and capitals in the target
.|ServeHTTPBrowserCold|a person's request with cold CPU caches (read handler-ns/op, minus BotBaselineCold's)
.|ServeHTTPBotAllowedCold|an allowed crawler's request with cold CPU caches (handler-ns/op, minus BotBaselineCold's)
.|ServeHTTPBotBaselineCold|the cold loop through a handler that only calls next: the floor under the two above
.|FingerprintConn|robots_fingerprint, per TLS connection: read the ClientHello, compute its JA4
.|FingerprintListener|a new TLS connection on loopback (Go client and server, full handshake), with robots_fingerprint (wrapper) and without (none)
./internal/policy|AssessAllowed|the decision alone: a verified crawler, its own group, one version, a plain target
./enforce|Decide5Rules|RFC 9309 decision on a 5-rule robots.txt
./enforce|DecideCorpus|RFC 9309 decision, averaged over the real robots.txt files of testdata
./enforce|Decide10kRules|RFC 9309 decision on 10,000 rules
./enforce|Parse500KiB|parsing and compiling a 500 KiB robots.txt (the largest read)
./enforce|WorstCaseRun|hostile file: 10,000 wildcard rules, 8 KiB targets (runs of one letter)
./enforce|WorstCaseNgramOrder|hostile file: random 2-4-letter segments in the wrong order (the slowest shape known)
./agents|IdentifyCached|identifying a User-Agent already seen
./agents|IdentifyUncachedBrowser|identifying a browser's User-Agent seen for the first time
./agents|IdentifyUncachedCrawler|identifying a crawler's User-Agent seen for the first time
./enforce/state|MemoryThrottle|one Crawl-delay decision in the memory store
./enforce/state|RedisThrottle|one Crawl-delay decision in Redis on loopback (p50-ns, p99-ns: latency)
./agents/webbotauth|VerifyCached|Web Bot Auth: a signed request whose key directory is cached (mostly Ed25519)
./agents/webbotauth|VerifyUnsigned|Web Bot Auth: a request without a signature
./agents/ja4|JA4|parsing Chromium's ClientHello and computing its JA4
./internal/audit|Audit|caddy robots audit: 2,000,000 generated log lines, every crawler request judged (lines/s)
LIST
}

# Runs each package's benchmarks once with -count, into $work/go.txt.
run_go() {
  local pkgs pkg names
  pkgs=$(benchmarks | cut -d'|' -f1 | awk '!seen[$0]++')
  : >"$work/go.txt"
  for pkg in $pkgs; do
    names=$(benchmarks | awk -F'|' -v p="$pkg" '$1 == p {printf "%s%s", sep, $2; sep="|"}')
    echo "go test -bench '^Benchmark($names)\$' -count $COUNT $pkg" >&2
    go test -run '^$' -timeout 60m -bench "^Benchmark($names)\$" -benchmem -count "$COUNT" "$pkg" | tee -a "$work/go.txt" >&2 ||
      echo "report.sh: the benchmarks of $pkg failed; their rows are missing" >&2
  done
  echo "go test -bench Corpus -count $COUNT (bench/, against temoto/robotstxt)" >&2
  # bench/ is a module of its own; its go.sum may lag the main module's
  # imports, so it runs from a copy (-modfile) that go may complete, and
  # bench/go.mod and go.sum are left as they are.
  cp bench/go.mod bench/go.sum "$work/"
  (cd bench && GOFLAGS=-mod=mod go test -modfile="$work/go.mod" -run '^$' -bench '^BenchmarkCorpus$' -benchmem -count "$COUNT" .) |
    tee -a "$work/go.txt" >&2 ||
    echo "report.sh: the benchmarks of bench/ failed; their rows are missing" >&2
}

# Prints "name unit median min max" for every benchmark line of go test
# output on stdin (the -N GOMAXPROCS suffix dropped).
medians() {
  awk '/^Benchmark/ {
      name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i += 2) v[name SUBSEP $(i+1)] = v[name SUBSEP $(i+1)] " " $i
    }
    END {
      for (k in v) {
        split(k, nk, SUBSEP); n = split(v[k], a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        print nk[1], nk[2], med, a[1], a[n]
      }
    }'
}

# human formats a time in ns, or a count.
human() { # value unit
  awk -v x="$1" -v u="$2" 'BEGIN {
    if (u ~ /ns/) {
      if (x >= 1e9) printf "%.2f s", x / 1e9; else if (x >= 1e6) printf "%.2f ms", x / 1e6
      else if (x >= 1e4) printf "%.1f µs", x / 1e3; else if (x >= 1e3) printf "%.2f µs", x / 1e3
      else if (x >= 100) printf "%.0f ns", x; else printf "%.1f ns", x
    } else if (x >= 1e6) printf "%.2f M", x / 1e6; else if (x >= 1e4) printf "%.0f k", x / 1e3
    else printf "%g", x }'
}

# go_table prints the Markdown table of the Go benchmarks.
go_table() {
  medians <"$work/go.txt" | sort >"$work/medians.txt"
  echo "| benchmark | what it measures | time per op: median (min–max) | allocs/op | B/op | other |"
  echo "|---|---|---|---|---|---|"
  {
    benchmarks | cut -d'|' -f2,3
    echo "Corpus|the decision over the real robots.txt files, against github.com/temoto/robotstxt (bench/)"
  } | while IFS='|' read -r name what; do
    local rows
    rows=$(awk -v n="$name" '$1 == n || index($1, n "/") == 1 {print $1}' "$work/medians.txt" | sort -u)
    if [ -z "$rows" ]; then
      echo "report.sh: no result for Benchmark$name (renamed or removed? update bench/report.sh)" >&2
      continue
    fi
    for row in $rows; do
      awk -v n="$row" '$1 == n' "$work/medians.txt" >"$work/row.txt"
      local ns allocs bytes other=""
      ns=$(awk '$2 == "ns/op" {printf "%s %s %s", $3, $4, $5}' "$work/row.txt")
      allocs=$(awk '$2 == "allocs/op" {print $3}' "$work/row.txt")
      bytes=$(awk '$2 == "B/op" {print $3}' "$work/row.txt")
      while read -r _ unit med _ _; do
        case $unit in ns/op | allocs/op | B/op) continue ;; esac
        other+="${other:+, }$unit $(human "$med" "$unit")"
      done <"$work/row.txt"
      read -r med lo hi <<<"$ns"
      printf '| `%s` | %s | %s (%s–%s) | %s | %s | %s |\n' "$row" "$what" \
        "$(human "$med" ns)" "$(human "$lo" ns)" "$(human "$hi" ns)" "${allocs:-}" "${bytes:-}" "$other"
    done
  done
}

machine() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
  echo "| | |"
  echo "|---|---|"
  echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M') |"
  echo "| CPU | ${cpu:-unknown} |"
  echo "| cores (nproc) | $(nproc) |"
  echo "| memory | $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) |"
  echo "| OS | $(uname -sr) |"
  echo "| Go | $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH) |"
  echo "| load average before / after the run | $load_before / $(cut -d' ' -f1-3 /proc/loadavg) |"
}

# https_section prints the section of bench/wrk.sh --https.
https_section() {
  cat <<HEAD

## End to end over HTTPS: bench/wrk.sh --https

The same site over HTTPS (\`tls internal\`) on two ports, both with the directive (its
\`tls\` signal off: wrk's handshake is OpenSSL's, and a browser's handshake skips that
signal), one of them behind the \`robots_fingerprint\` listener wrapper, which reads each
connection's ClientHello and computes its JA4: *without* and *with* are that wrapper.
\`browser\` and \`bot\` use wrk's keep-alive connections; \`browser-new\` and \`bot-new\`
open a new TLS connection per request (\`Connection: close\`), where the wrapper's
per-connection cost is all there is to see. $ROUNDS rounds of without–with–with–without; the
profile is of the site with the wrapper under new connections.
HEAD
  if [ "$ROUNDS" -lt 40 ]; then
    echo
    echo "**A short run: $ROUNDS rounds instead of 40**, so the ratios are placed less precisely (see the confidence intervals)."
  fi
  echo
  echo '```'
  cat "$work/wrk-https.txt"
  echo '```'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
run_go
if [ "$WRK" != 0 ]; then
  echo "bench/wrk.sh with ROUNDS=$ROUNDS" >&2
  ROUNDS=$ROUNDS ./bench/wrk.sh >"$work/wrk.txt"
fi
# The HTTPS results are reported when the run gives them: a failure (no
# TLS in this wrk, say) leaves their section out, with the reason on stderr.
if [ "$WRK_HTTPS" != 0 ]; then
  echo "bench/wrk.sh --https with ROUNDS=$ROUNDS" >&2
  ROUNDS=$ROUNDS ./bench/wrk.sh --https >"$work/wrk-https.txt" ||
    { echo "report.sh: bench/wrk.sh --https failed; its section is left out" >&2; : >"$work/wrk-https.txt"; }
fi

mkdir -p "$(dirname "$OUT")"
{
  cat <<'HEAD'
# Benchmarks

Generated by `bench/report.sh` (`make benchmarks-doc`); do not edit by hand. Every figure
is a time measured on the machine below, so it moves with the machine and with whatever else
ran on it: compare figures taken on one machine in one session, never across machines.

## The machine

HEAD
  machine
  cat <<HEAD

## Go benchmarks

\`go test -bench -benchmem -count $COUNT\`, medians of the $COUNT runs with the lowest and
highest in parentheses. ns/op of the \`…Cold\` benchmarks includes clearing the caches and
preparing the request and means nothing: read their \`handler-ns/op\`. Every engine decision
(\`enforce\`) allocates nothing; a person's request through the handler allocates nothing
(a test holds that promise).

HEAD
  go_table
  if [ "$WRK" != 0 ]; then
    cat <<HEAD

## End to end: bench/wrk.sh

One Caddy serves \`examples/site\` on two ports, with and without \`robots { crawl_delay off }\`,
and wrk sends a browser's requests (with the headers Chrome sends to a secure origin) and then
a crawler's, $ROUNDS rounds of without–with–with–without. *Throughput ratio* is requests per
second with the directive over without; *capacity ratio* is Caddy's CPU time per request
without over with (from \`/proc\`). The profile below is of the site with the directive, under
the same load: the share of Caddy's CPU spent inside the handler.
HEAD
    if [ "$ROUNDS" -lt 40 ]; then
      echo
      echo "**A short run: $ROUNDS rounds instead of 40**, so the ratios are placed less precisely (see the confidence intervals)."
    fi
    echo
    echo '```'
    cat "$work/wrk.txt"
    echo '```'
  else
    echo
    echo "bench/wrk.sh was not run for this file (WRK=0): run \`make benchmarks-doc\` for the end-to-end figures."
  fi
  if [ -s "$work/wrk-https.txt" ]; then
    https_section
  fi
} >"$OUT"
echo "wrote $OUT" >&2
