#!/usr/bin/env bash
# heartbeat.sh LABEL COMMAND [ARG...] runs COMMAND, saying "LABEL…" on
# stderr when it starts and "LABEL… (N s)" every HEARTBEAT_EVERY seconds
# (20 by default) while it runs, and exits with COMMAND's status. A cold
# go vet, staticcheck or apt-get install works for minutes without a word;
# through this no step of make test is silent for more than 30 s.
#
# Sourced, it defines the function heartbeat with the same arguments, which
# also runs shell functions (scripts/apt.sh uses it so), under set -e too.

heartbeat() {
  local label=$1 every=${HEARTBEAT_EVERY:-20} start rc r
  shift
  start=$(date +%s)
  echo "$label…" >&2
  # The command runs in a process substitution that ends by writing its
  # status; waiting for that line with a timeout is the clock, with no
  # sleeping process left behind and no delay once the command is done.
  exec 8>&1
  # set +e: a caller's errexit must not skip the status line.
  exec 9< <(
    set +e
    "$@" >&8 8>&-
    echo "$?"
  )
  while :; do
    if IFS= read -r -t "$every" rc <&9; then
      break
    else
      r=$?
    fi
    if [ "$r" -gt 128 ]; then # timed out: still running
      echo "$label… ($(($(date +%s) - start)) s)" >&2
      continue
    fi
    rc=1 # the status never came
    break
  done
  exec 9<&- 8>&-
  return "$rc"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -u
  if [ $# -lt 2 ]; then
    echo "usage: heartbeat.sh LABEL COMMAND [ARG...]" >&2
    exit 2
  fi
  heartbeat "$@"
fi
