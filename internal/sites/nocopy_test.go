package sites

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
)

// warnLog records the loader's repeatable warnings.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) warn(msg string, _ ...zap.Field) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// TestFailedLoadWithoutCopySaysSo: a site whose robots.txt never loaded
// has no "last good copy" to keep; the warning says there is no copy yet
// and which unavailable rule applies. Once a copy exists, a failure keeps it.
func TestFailedLoadWithoutCopySaysSo(t *testing.T) {
	var log warnLog
	f := &fakeSite{answer: always(http.StatusServiceUnavailable, "down")}
	l := newSiteLoader(t, f, 8080, Config{Warn: log.warn, Unavailable: "disallow"})
	if snap := snapshot(l, "a.example"); !snap.Unavailable {
		t.Fatalf("snapshot %+v, want unavailable", snap)
	}
	msgs := strings.Join(log.take(), "\n")
	if strings.Contains(msgs, "last good") {
		t.Errorf("a site with no copy logged %q", msgs)
	}
	if !strings.Contains(msgs, "no copy of robots.txt yet") || !strings.Contains(msgs, "disallow: crawlers get 503") {
		t.Errorf("want the no-copy warning naming the unavailable rule, got %q", msgs)
	}

	f.set(always(http.StatusOK, "User-agent: *\nDisallow: /p/\n"))
	Reload(context.Background(), []*Loader{l})
	f.set(always(http.StatusServiceUnavailable, "down"))
	log.take()
	Reload(context.Background(), []*Loader{l})
	if msgs := strings.Join(log.take(), "\n"); !strings.Contains(msgs, "keeping the last good robots.txt") {
		t.Errorf("a failure after a copy: %q, want the last good copy kept", msgs)
	}
	if got := NoCopyYet("allow"); !strings.Contains(got, "allow: crawlers are not refused") {
		t.Errorf("NoCopyYet(allow) = %q", got)
	}
}
