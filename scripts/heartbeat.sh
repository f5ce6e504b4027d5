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
  local label=$1 every=${HEARTBEAT_EVERY:-20} start status r rc line
  shift
  start=$(date +%s)
  status=$(mktemp) || return 1
  echo "$label…" >&2
  # The command runs in a process substitution that writes its status to a
  # file and ends, closing the pipe read below: waiting for that end of
  # file with a timeout is the clock, with no sleeping process left behind
  # and no delay once the command is done. (Nothing is written to the pipe:
  # a line arriving just as read -t times out can be lost.)
  exec 8>&1
  exec 9< <(
    set +e # a caller's errexit must not skip the status
    "$@" >&8 8>&-
    echo "$?" >"$status"
  )
  while :; do
    r=0
    IFS= read -r -t "$every" line <&9 || r=$?
    if [ "$r" -le 128 ]; then # end of file: the command is done
      break
    fi
    echo "$label… ($(($(date +%s) - start)) s)" >&2
  done
  exec 9<&- 8>&-
  rc=$(cat "$status") || rc=
  rm -f "$status"
  return "${rc:-1}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -u
  if [ $# -lt 2 ]; then
    echo "usage: heartbeat.sh LABEL COMMAND [ARG...]" >&2
    exit 2
  fi
  heartbeat "$@"
fi
