# wrapper-share.awk, loaded after pprof-traces.awk, reads `go tool pprof
# -traces` output of a Caddy CPU profile taken under new TLS connections and
# prints four numbers:
#   1. the percentage of CPU spent in the robots_fingerprint listener
#      wrapper's own work: samples under its watching of the ClientHello
#      (fingerprintConn.observe: parsing it, its JA4, the engine's
#      classification), not in the reads it passes on (its Accept only
#      wraps the connection: one small allocation, counted in the GC's
#      share);
#   2. the percentage spent in the server's TLS handshakes (the wrapper's
#      work is part of them: it runs while the handshake reads the hello);
#   3. the percentage in the garbage collector's background workers, for the
#      allocation estimate;
#   4. the total, in ms (or bytes).
# On an allocation profile (pprof -sample_index=alloc_space -traces) the
# first figure is the wrapper's share of the bytes allocated.
#
#   go tool pprof -traces caddy cpu.prof | awk -f bench/pprof-traces.awk -f bench/wrapper-share.awk
function sample(val, n) {
  if (holds("caddy-robots\\.\\(\\*fingerprintConn\\)\\.observe$")) ours += val
  if (holds("^crypto/tls\\.\\(\\*Conn\\)\\.serverHandshake$")) handshake += val
}
function report(total) {
  printf "%.3f %.3f %.3f %.0f\n", 100 * ours / total, 100 * handshake / total, 100 * gc / total, total
}
