// Package warnlimit keeps a warning that can repeat (a failing store, a
// misconfigured proxy, a refused load) to one log line every 30 seconds,
// and says how many were held back; Shorten bounds what a value quoted in a
// log line may add to it.
package warnlimit

import (
	"sync"
	"time"
	"unicode/utf8"
)

// Every is how often a Limiter lets a warning through.
const Every = 30 * time.Second

// Limiter lets a warning through at most once every Every. The zero value
// is ready; it is safe for concurrent use.
//
// It is not golang.org/x/time/rate: a warning says how many were held back
// (the suppressed_since_last_warning field), limiters live as zero values
// in structs and package variables, and Allow takes the caller's clock;
// rate.Sometimes has none of the three and rate.Limiter neither of the
// first two, so a wrapper would be longer than this.
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

// Shorten cuts s to at most n bytes without splitting a UTF-8 sequence,
// and marks the cut with "...": how a log line quotes a value a client or
// a file chose (a User-Agent, a target, a robots.txt's first line).
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
