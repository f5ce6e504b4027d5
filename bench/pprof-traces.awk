# pprof-traces.awk reads the output of `go tool pprof -traces` (a CPU or an
# allocation profile) for the reports that load it first:
#
#   go tool pprof -traces caddy cpu.prof | awk -f bench/pprof-traces.awk -f bench/handler-share.awk
#
# It calls sample(val, n) once per trace, with the trace's value in ms (CPU)
# or bytes (allocations) and its frames in frames[1..n], leaf first, and
# report(total) at the end, with the sum of the values; the report defines
# both. Samples of the garbage collector's background workers are summed in
# gc for the reports that need the GC's share.
function ms(v) {
  # byte units, for allocation profiles
  if (v ~ /GB$/) { sub(/GB$/, "", v); return v * 1073741824 }
  if (v ~ /MB$/) { sub(/MB$/, "", v); return v * 1048576 }
  if (v ~ /kB$/) { sub(/kB$/, "", v); return v * 1024 }
  if (v ~ /B$/)  { sub(/B$/, "", v);  return v + 0 }
  # time units, for CPU profiles
  if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
  if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 }
  if (v ~ /ns$/) { sub(/ns$/, "", v); return v / 1e6 }
  if (v ~ /s$/)  { sub(/s$/, "", v);  return v * 1000 }
  return v + 0
}
# holds reports whether a frame of the current trace matches re.
function holds(re,    i) {
  for (i = 1; i <= n; i++) if (frames[i] ~ re) return 1
  return 0
}
function flush() {
  if (n == 0) return
  total += val
  if (holds("^runtime\\.gcBgMarkWorker$")) gc += val
  sample(val, n)
  n = 0
}
/^-+\+-+$/ { flush(); next }
/^ +[0-9.]+(ms|us|ns|s|B|kB|MB|GB) +[^ ]/ { flush(); val = ms($1); n = 1; frames[1] = $2; next }
/^ +[^ ]/ && n > 0 { n++; frames[n] = $1; next }
END {
  flush()
  if (total == 0) { print "no samples" > "/dev/stderr"; exit 1 }
  report(total)
}
