package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// TestHistoryBuckets: a request is counted in the bucket of its minute
// (and quarter-hour), an hour later that minute's bucket starts anew, and
// a bucket older than the window reads as nothing.
func TestHistoryBuckets(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 7, 30, 0, time.UTC)
	h := NewHistory()
	h.Record(t0, Served)
	h.Record(t0.Add(10*time.Second), Refused)
	h.Record(t0.Add(2*time.Minute), Throttled)

	hour := h.hour.series(t0.Add(2 * time.Minute))
	if len(hour.Buckets) != 2 {
		t.Fatalf("hour buckets %+v, want 2", hour.Buckets)
	}
	want := []Bucket{
		{Start: time.Date(2026, 11, 28, 10, 7, 0, 0, time.UTC), Requests: 2, Refused: 1},
		{Start: time.Date(2026, 11, 28, 10, 9, 0, 0, time.UTC), Requests: 1, Throttled: 1},
	}
	for i, b := range want {
		if hour.Buckets[i] != b {
			t.Errorf("hour bucket %d = %+v, want %+v", i, hour.Buckets[i], b)
		}
	}
	if len(hour.dense) != 60 || !hour.Until.Equal(time.Date(2026, 11, 28, 10, 10, 0, 0, time.UTC)) {
		t.Errorf("hour window: %d buckets until %s", len(hour.dense), hour.Until)
	}
	day := h.day.series(t0.Add(2 * time.Minute))
	if len(day.Buckets) != 1 || day.Buckets[0] != (Bucket{Start: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), Requests: 3, Refused: 1, Throttled: 1}) {
		t.Errorf("day buckets %+v", day.Buckets)
	}

	// An hour on: the 10:07 bucket is out of the window, and a request
	// at 11:07 starts the same slot anew.
	later := t0.Add(time.Hour)
	if got := h.hour.series(later).Buckets; len(got) != 1 || got[0].Requests != 1 {
		t.Errorf("an hour on, the window holds %+v, want only 10:09's request", got)
	}
	h.Record(later, Served)
	got := h.hour.series(later).Buckets
	if len(got) != 2 || got[1].Requests != 1 || got[1].Refused != 0 || !got[1].Start.Equal(time.Date(2026, 11, 28, 11, 7, 0, 0, time.UTC)) {
		t.Errorf("the reused slot: %+v", got)
	}
	if d := h.day.series(later).Total(); d.Requests != 4 {
		t.Errorf("the day counts %d requests, want 4", d.Requests)
	}
}

// TestHistoryConcurrentRotation: requests of many goroutines across
// minute boundaries are all counted, in the bucket of their minute (run
// with -race).
func TestHistoryConcurrentRotation(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	h := NewHistory()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				h.Record(t0.Add(time.Duration(i/1000)*time.Minute+time.Duration(g)*time.Millisecond), Served)
			}
		}()
	}
	wg.Wait()
	got := h.hour.series(t0.Add(2 * time.Minute)).Buckets
	if len(got) != 3 {
		t.Fatalf("buckets %+v, want 3", got)
	}
	for _, b := range got {
		if b.Requests != 8000 {
			t.Errorf("bucket %s counted %d, want 8000", b.Start, b.Requests)
		}
	}
}

// TestHistoryOther: the site block's history is the sum of every history
// it keeps, and the requests of crawlers not listed (with a history of
// their own or without) are the "other" row: the site block's less the
// listed crawlers'.
func TestHistoryOther(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	rest, a, b := NewHistory(), NewHistory(), NewHistory()
	for range 3 {
		rest.Record(now, Served)
	}
	for range 2 {
		b.Record(now, Served)
	}
	for range 3 {
		a.Record(now, Refused)
	}
	st := HistoryOf([]*History{rest, a, nil, b}, []CrawlerSeries{{Name: "A", History: a}, {Name: "untracked"}}, now)
	if len(st.Crawlers) != 2 || st.Crawlers[0].Crawler != "A" || !st.Crawlers[1].Other {
		t.Fatalf("crawlers %+v, want A then other", st.Crawlers)
	}
	if o := st.Crawlers[1].Hour.Total(); o.Requests != 5 || o.Refused != 0 {
		t.Errorf("other: %+v, want 5 requests, none refused", o)
	}
	if st.Hour.Total().Requests != 8 {
		t.Errorf("site: %+v", st.Hour.Total())
	}
	svg := string(st.Hour.Sparkline())
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, `aria-label="8 requests, 3 refused, 0 throttled"`) || !strings.Contains(svg, "#c62828") {
		t.Errorf("sparkline: %s", svg)
	}
}

// BenchmarkHistoryRecord is what a bot request pays for a history: run
// with -cpu 1,2 to see it under contention.
func BenchmarkHistoryRecord(b *testing.B) {
	h := NewHistory()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Record(time.Now(), Refused)
		}
	})
}

// TestStatusPageHistoryAndLift: the page draws a site block's history as
// inline SVG with its totals and since when it counts, gives each ban a
// Lift button carrying its identity, and its Content-Security-Policy
// allows exactly the embedded lift script (by hash) and requests to its
// own origin.
func TestStatusPageHistoryAndLift(t *testing.T) {
	now := time.Now()
	h := NewHistory()
	h.Record(now, Served)
	h.Record(now, Throttled)
	since := now.Add(-90 * time.Minute)
	site := Site{Source: "inline", Mode: "enforce", Store: state.NewMemory(state.MemoryConfig{}), StoreType: "memory",
		CountsSince: since, History: HistoryOf([]*History{h}, []CrawlerSeries{{Name: "SlowBot", History: h}}, now)}
	policy := state.StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}
	id := state.NewIdentity("BanMeBot", false, netip.MustParseAddr("198.51.100.31"))
	if _, err := site.Store.Strike(context.Background(), id, policy, now, state.StrikeInfo{Crawler: "BanMeBot", Token: "*", Line: 2}); err != nil {
		t.Fatal(err)
	}
	site.Strikes = policy
	api := &API{Sites: func() []Site { return []Site{site} }}
	w := httptest.NewRecorder()
	if err := api.servePage(w, httptest.NewRequest("GET", "/robots/", nil)); err != nil {
		t.Fatal(err)
	}
	page := w.Body.String()
	for _, want := range []string{`<svg class="spark"`, `aria-label="2 requests, 0 refused, 1 throttled"`, "2 requests", "1 throttled",
		"Counting since " + since.UTC().Format("2006-01-02 15:04:05Z") + " (1h 30m ago)", "<b>SlowBot</b>",
		`<button type="button" class="lift" data-identity="` + template.HTMLEscapeString(id.String()) + `">Lift</button>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	sum := sha256.Sum256([]byte(liftJS))
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
}

// TestHistoryLateRequest: a request whose time is a whole window behind
// the bucket it maps to (which holds a newer interval) is not counted into
// that newer interval.
func TestHistoryLateRequest(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 7, 0, 0, time.UTC)
	h := NewHistory()
	h.Record(now, Served)
	h.Record(now.Add(-time.Hour), Refused) // the same minute slot, an hour before
	if got := h.hour.series(now).Total(); got.Requests != 1 || got.Refused != 0 {
		t.Errorf("the hour counts %+v, want the one request of 10:07", got)
	}
	if got := h.day.series(now).Total(); got.Requests != 2 || got.Refused != 1 {
		t.Errorf("the day counts %+v, want both", got)
	}
}
