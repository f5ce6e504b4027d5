# handler-share.awk, loaded after pprof-traces.awk, reads `go tool pprof
# -traces` output of a Caddy CPU profile and prints four numbers:
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
#   go tool pprof -traces caddy cpu.prof | awk -f bench/pprof-traces.awk -f bench/handler-share.awk
function sample(val, n,    i, next_seen, growth) {
  for (i = 1; i <= n; i++) {           # leaf first
    if (frames[i] ~ /caddyhttp\.HandlerFunc\.ServeHTTP$/) next_seen = 1
    if (frames[i] ~ /^runtime\.newstack$/) growth = 1
    if (frames[i] ~ /caddy-robots\.\(\*Handler\)\.ServeHTTP$/) {
      if (!next_seen && growth) stack += val
      else if (!next_seen) ours += val
      return
    }
  }
}
function report(total) {
  printf "%.3f %.3f %.3f %.0f\n", 100 * ours / total, 100 * stack / total, 100 * gc / total, total
}
