#!/usr/bin/env bash
# make unit: every test, through testsum (progress per package, the slowest
# tests, the tests' [report] figures, and a failure on any skip under CI;
# while go test compiles, a line at least every 30 s naming the packages
# not started yet).
#
# Every package runs under the race detector except the engine's own tests
# (enforce): they check the matcher against reference implementations on
# one goroutine, where the detector finds nothing and costs ~6x (over 100 s
# of a 2-core machine's CPU, taken from the integration tests beside them).
# They run without it, at the same time as the rest. The engine's shared
# scratch memory is still tested under the detector (TestConcurrentDecisions,
# and the handler's concurrent tests through it).
# shellcheck disable=SC2086 # $pkgs: one package path per word
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
mod=$($GO list -m)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO build -o .testsum ./internal/testsum || exit 1
pkgs=$($GO list ./... | grep -vx "$mod/enforce")
echo "unit: building and running the tests of $(wc -w <<<"$pkgs") packages under the race detector, and $mod/enforce's without it (the first build takes minutes)"

( $GO test -count=1 -json -skip '^TestConcurrent' ./enforce >"$tmp/enforce.json"
  echo $? >"$tmp/enforce.rc" ) &

{
  rc=0
  $GO test -race -count=1 -json $pkgs || rc=1
  $GO test -race -count=1 -json -run '^TestConcurrent' ./enforce || rc=1
  # The engine's tests run beside these as a job of the script's shell,
  # which this block (a subshell of the pipeline) cannot wait for: their
  # exit code, written once their output is complete, says they are done.
  until [ -s "$tmp/enforce.rc" ]; do sleep 1; done
  cat "$tmp/enforce.json"
  [ "$(cat "$tmp/enforce.rc")" = 0 ] || rc=1
  exit $rc
} | ./.testsum $pkgs
