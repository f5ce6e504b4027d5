//go:build race

package enforce

// raceOn is set when the race detector is on: it makes sync.Pool drop
// items at random, so allocation counts of pooled paths are not exact.
const raceOn = true
