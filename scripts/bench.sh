#!/usr/bin/env bash
# bench.sh: the Go benchmarks of the root package, the engine, agents and the
# decision, summarised by benchstat; with BASE set, compared with that git
# ref (make bench BASE=main).
#
#   BASE=<git ref>  also benchmark BASE, checked out in a temporary git
#                   worktree (removed on exit); the two sides run in turns,
#                   one run of every benchmark each, COUNT times, so that
#                   what else the machine does falls on both alike
#   COUNT=10        runs per side (benchstat wants at least 6 for a
#                   confidence interval, 10 for a steady median)
#   BENCH=.         the benchmarks to run (a go test -bench pattern)
#   BENCHTIME=1s    go test -benchtime, per benchmark and run
#   PKGS="..."      the packages (default: . ./enforce/... ./agents/...
#                   ./internal/policy/...)
#   OUT=dir         where the raw results go (default: a temporary
#                   directory, printed); base.txt and new.txt there are
#                   benchstat's inputs
#
# Each package's test binary is built once per side and run from its
# package's directory (the benchmarks read testdata/).
set -euo pipefail

GO=${GO:-go}
COUNT=${COUNT:-10}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-1s}
PKGS=${PKGS:-. ./enforce/... ./agents/... ./internal/policy/...}
BENCHSTAT=${BENCHSTAT:-golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da}

root=$(git rev-parse --show-toplevel)
out=${OUT:-$(mktemp -d -t caddy-robots-bench.XXXXXX)}
mkdir -p "$out"
base_tree=""
cleanup() {
	if [[ -n $base_tree ]]; then
		git -C "$root" worktree remove --force "$base_tree" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# build <side> <tree>: builds a test binary per package of PKGS that has
# tests, and lists "<binary> <package dir>" in $out/<side>.bins.
build() {
	local side=$1 tree=$2 i=0
	mkdir -p "$out/$side"
	: >"$out/$side.bins"
	# shellcheck disable=SC2086 # PKGS is a list of patterns
	while read -r dir tests; do
		[[ $tests == yes ]] || continue
		i=$((i + 1))
		(cd "$dir" && $GO test -c -o "$out/$side/$i.test" .)
		echo "$out/$side/$i.test $dir" >>"$out/$side.bins"
	done < <(cd "$tree" && $GO list -f '{{.Dir}} {{if or .TestGoFiles .XTestGoFiles}}yes{{end}}' $PKGS)
}

# run <side>: one run of every benchmark of the side's binaries.
run() {
	local side=$1 bin dir
	while read -r bin dir; do
		(cd "$dir" && "$bin" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.benchmem -test.count 1) >>"$out/$side.txt"
	done <"$out/$side.bins"
}

echo "bench: building test binaries (results in $out)" >&2
build new "$root"
: >"$out/new.txt"
if [[ -n ${BASE:-} ]]; then
	base_tree=$(mktemp -d -t caddy-robots-base.XXXXXX)
	rmdir "$base_tree"
	git -C "$root" worktree add --detach "$base_tree" "$BASE" >/dev/null
	build base "$base_tree"
	: >"$out/base.txt"
fi
for ((round = 1; round <= COUNT; round++)); do
	echo "bench: round $round of $COUNT" >&2
	if [[ -n $base_tree ]]; then
		run base
	fi
	run new
done
if [[ -n $base_tree ]]; then
	$GO run "$BENCHSTAT" "base=$out/base.txt" "new=$out/new.txt"
else
	$GO run "$BENCHSTAT" "$out/new.txt"
fi
