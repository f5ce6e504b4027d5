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
  if [ -n "$engine" ]; then
    $GO test -count=1 -json -skip '^TestConcurrent' ./enforce >"$tmp/enforce.json" &
  fi
  if [ -n "$rest" ]; then
    $GO test -race -count=1 -json $rest || rc=1
  fi
  if [ -n "$engine" ]; then
    $GO test -race -count=1 -json -run '^TestConcurrent' ./enforce || rc=1
    wait $! || rc=1
    cat "$tmp/enforce.json" # after the rest: two streams would interleave
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
slow=$($GO tool -modfile=scripts/tools.mod gotestsum tool slowest --jsonfile "$tmp/tests.json" --threshold 100ms | head -n 10)
[ -z "$slow" ] || printf '\nThe slowest tests:\n%s\n' "$slow"
$GO build -o "$tmp/testreport" ./scripts/testreport && "$tmp/testreport" "$tmp/tests.json" || rc=1
exit $rc
