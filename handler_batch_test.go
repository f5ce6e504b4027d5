package caddyrobots

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// BenchmarkServeHTTPBotAllowedOnly is BenchmarkServeHTTPBotAllowed with
// the requests prepared ahead, 16 at a time (their data still in the cache, as a request just read is), outside the timer: ns/op is
// the handler's own cost on a fresh request (its header map, URL, vars and
// replacer new, as in a server), without the baseline to subtract.
func BenchmarkServeHTTPBotAllowedOnly(b *testing.B) {
	h, done := newTestHandler(b, &Handler{CrawlDelay: "off"})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServeOnly(b, h, "/about.html", benchBotUA, "203.0.113.2:5000")
}

// BenchmarkServeHTTPBrowserOnly is BenchmarkServeHTTPBrowser on fresh
// requests prepared ahead (BenchmarkServeHTTPBotAllowedOnly).
func BenchmarkServeHTTPBrowserOnly(b *testing.B) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServeOnly(b, h, "/private/index.html", benchBrowserUA, "203.0.113.1:5000")
}

func benchServeOnly(b *testing.B, h caddyhttp.MiddlewareHandler, target, ua, remote string) {
	raw, clientIP := rawRequest(target, ua, remote)
	srv := &caddyhttp.Server{}
	w := httptest.NewRecorder()
	_ = h.ServeHTTP(w, prepare(raw, clientIP, w, srv), nopNext)
	const batch = 16
	reqs := make([]*http.Request, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		n := min(batch, b.N-i)
		for j := range n {
			reqs[j] = freshRequest(raw, clientIP, w, srv)
		}
		b.StartTimer()
		for _, r := range reqs[:n] {
			_ = h.ServeHTTP(w, r, nopNext)
		}
	}
}
