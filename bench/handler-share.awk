# handler-share.awk reads `go tool pprof -traces` output of a Caddy CPU
# profile and prints four numbers:
#   1. the percentage of CPU spent in the robots handler itself: samples whose
#      stack holds caddy-robots.(*Handler).ServeHTTP and, between it and the
#      leaf, no call into the next handler and no stack growth;
#   2. the percentage spent growing the goroutine's stack inside the handler
#      (runtime.newstack). A connection's stack is shrunk by the GC between
#      requests and regrown by whatever code first runs deep; without the
#      directive file_server pays the same growth, so it is not the handler's
#      cost, but it is reported;
#   3. the percentage in the garbage collector's background workers, for the
#      allocation estimate;
#   4. the total, in ms (or bytes).
# On an allocation profile (pprof -sample_index=alloc_space -traces) the
# first figure is the handler's share of the bytes allocated.
#
#   go tool pprof -traces caddy cpu.prof | awk -f bench/handler-share.awk
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
function flush() {
  if (n == 0) return
  total += val
  next_seen = 0; growth = 0
  for (i = 1; i <= n; i++) {           # leaf first
    if (frames[i] ~ /caddyhttp\.HandlerFunc\.ServeHTTP$/) next_seen = 1
    if (frames[i] ~ /^runtime\.newstack$/) growth = 1
    if (frames[i] ~ /caddy-robots\.\(\*Handler\)\.ServeHTTP$/) {
      if (!next_seen && growth) stack += val
      else if (!next_seen) ours += val
      break
    }
  }
  for (i = 1; i <= n; i++) if (frames[i] ~ /^runtime\.gcBgMarkWorker$/) { gc += val; break }
  n = 0
}
/^-+\+-+$/ { flush(); next }
/^ +[0-9.]+(ms|us|ns|s|B|kB|MB|GB) +[^ ]/ { flush(); val = ms($1); n = 1; frames[1] = $2; next }
/^ +[^ ]/ && n > 0 { n++; frames[n] = $1; next }
END {
  flush()
  if (total == 0) { print "no samples" > "/dev/stderr"; exit 1 }
  printf "%.3f %.3f %.3f %.0f\n", 100 * ours / total, 100 * stack / total, 100 * gc / total, total
}
