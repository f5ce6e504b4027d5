#!/usr/bin/env bash
# Builds Caddy with this plugin from a local checkout, the way xcaddy does,
# without xcaddy: a throwaway main module that imports Caddy's command, its
# standard modules and the plugin, with the plugin's module path replaced by
# the checkout.
#
#   scripts/build-with-plugin.sh [-o OUTPUT] [CHECKOUT]
#
# OUTPUT defaults to ./caddy, CHECKOUT to the repository this script is in.
# CADDY_VERSION (default v2.11.9) picks Caddy's version; it cannot be older
# than the one the plugin's go.mod requires. BUILD_FLAGS is passed to
# `go build` (xcaddy's release flags: BUILD_FLAGS='-trimpath -ldflags=-w\ -s
# -tags=nobadger,nomysql,nopgx'; those miss the warm build cache, so the
# default is none). Ends by listing the plugin's modules from the binary.
set -euo pipefail

out=caddy
while getopts 'o:' opt; do
  case $opt in
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-o OUTPUT] [CHECKOUT]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
checkout=${1:-$(dirname "$0")/..}
checkout=$(cd "$checkout" && pwd)
case $out in /*) ;; *) out=$PWD/$out ;; esac
caddy_version=${CADDY_VERSION:-v2.11.9}
module=github.com/caddyrobots/caddy-robots

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat >main.go <<EOF
package main

import (
	_ "time/tzdata"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "$module"
)

func main() {
	caddycmd.Main()
}
EOF
go mod init caddy >/dev/null 2>&1
# An unpublished module has no version to require: v0.0.0 stands for the
# checkout that the replace directive names.
go mod edit -require="github.com/caddyserver/caddy/v2@$caddy_version" \
  -require="$module@v0.0.0" -replace="$module=$checkout"
go mod tidy
# shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags
go build ${BUILD_FLAGS:-} -o "$out" .
"$out" list-modules --versions | grep robots
