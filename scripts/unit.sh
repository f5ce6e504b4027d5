#!/usr/bin/env bash
# make unit: every test, through gotestsum (a line per package as it
# finishes, the output of failed tests, the skipped tests, the counts),
# under heartbeat.sh (a line at least every 20 s while go test compiles or
# a package runs long), then the slowest tests (gotestsum tool slowest),
# the tests' [report] figures and, under CI=true, a failure on any skip
# (scripts/testreport). gotestsum's version is pinned in scripts/tools.mod,
# apart from the plugin's own go.mod; it is built once, then runs offline.
#
#   PKGS="./internal/policy ./agents/..." scripts/unit.sh
#
# runs those packages only (default ./...).
#
# Every package runs under the race detector except the engine's own tests
# (enforce): they check the matcher against reference implementations on
# one goroutine, where the detector finds nothing and costs ~6x (over 100 s
# of a 2-core machine's CPU, taken from the integration tests beside them).
# They run without it, at the same time as the rest. The engine's shared
# scratch memory is still tested under the detector (TestConcurrentDecisions,
# and the handler's concurrent tests through it).
# shellcheck disable=SC2086 # $PKGS, $rest: package paths, one per word
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
mod=$($GO list -m)
pkgs=$($GO list ${PKGS:-./...}) || exit 1

# unit.sh --json DIR is the command gotestsum runs: the tests, as go test
# -json events on stdout.
if [ "${1:-}" = --json ]; then
  tmp=$2 rc=0
  rest=$(grep -vx "$mod/enforce" <<<"$pkgs")
  engine=$([ "$rest" != "$pkgs" ] && echo 1)
  # The integration tests are the long pole (about 7 minutes in one
  # process), and most of that is waiting on real crawlers' Crawl-delay and
  # real browsers. Their binary is built once and run as two processes at
  # the same time: the real-crawler and real-browser tests, and the rest.
  # Every test picks free ports and its own Xvfb display, as two checkouts
  # running make test at once do.
  integ=$(grep -x "$mod/integration" <<<"$rest")
  rest=$(grep -vx "$mod/integration" <<<"$rest")
  shard='^Test(RealBrowser|RealCrawlers|RotatingRogue|TrapLinksGraphicsPerson|TrapMarkFollowsTheHandshake|TLSEngineOfRealClients|BuildWithPlugin|CheckExitCodeReachesShell|Redis)'
  if [ -n "$integ" ]; then
    if $GO test -c -race -o "$tmp/integration.test" ./integration >"$tmp/integration-build.txt" 2>&1; then
      (cd integration && $GO tool test2json -t -p "$integ" "$tmp/integration.test" -test.v=test2json \
        -test.count=1 -test.timeout=20m -test.run "$shard" >"$tmp/integration-1.json") &
      shard1=$!
      (cd integration && $GO tool test2json -t -p "$integ" "$tmp/integration.test" -test.v=test2json \
        -test.count=1 -test.timeout=20m -test.skip "$shard" >"$tmp/integration-2.json") &
      shard2=$!
    else
      cat "$tmp/integration-build.txt" >&2
      rc=1
    fi
  fi
  if [ -n "$engine" ]; then
    $GO test -count=1 -json -skip '^TestConcurrent' ./enforce >"$tmp/enforce.json" &
    enginePID=$!
  fi
  if [ -n "$rest" ]; then
    $GO test -race -count=1 -json $rest || rc=1
  fi
  if [ -n "$engine" ]; then
    $GO test -race -count=1 -json -run '^TestConcurrent' ./enforce || rc=1
    wait $enginePID || rc=1
    cat "$tmp/enforce.json" # after the rest: two streams would interleave
  fi
  for pid in ${shard1:-} ${shard2:-}; do
    wait "$pid" || rc=1
  done
  if [ -n "${shard1:-}" ]; then
    cat "$tmp/integration-1.json" "$tmp/integration-2.json"
  fi
  exit $rc
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "unit: building and running the tests of $(wc -w <<<"$pkgs") packages (the first build takes minutes)"
rc=0
scripts/heartbeat.sh "unit: go test" \
  $GO tool -modfile=scripts/tools.mod gotestsum --format pkgname --jsonfile "$tmp/tests.json" \
  --raw-command -- scripts/unit.sh --json "$tmp" || rc=1
slow=$($GO tool -modfile=scripts/tools.mod gotestsum tool slowest --jsonfile "$tmp/tests.json" --threshold 100ms | sed -n '1,10p')
[ -z "$slow" ] || printf '\nThe slowest tests:\n%s\n' "$slow"
$GO build -o "$tmp/testreport" ./scripts/testreport && "$tmp/testreport" "$tmp/tests.json" || rc=1
exit $rc
