//go:build !race

package state

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
