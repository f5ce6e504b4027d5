// Package warnlimit keeps a warning that can repeat (a failing store, a
// misconfigured proxy, a refused load) to one log line every 30 seconds,
// and says how many were held back.
package warnlimit

import (
	"sync"
	"time"
)

// Every is how often a Limiter lets a warning through.
const Every = 30 * time.Second

// Limiter lets a warning through at most once every Every. The zero value
// is ready; it is safe for concurrent use.
type Limiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Allow reports whether a warning may be logged at now, and how many were
// held back since the last one that was.
func (l *Limiter) Allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.last) < Every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
