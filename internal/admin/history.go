package admin

// Decisions over time, for the status page's sparklines and the "history"
// of GET /robots/status: a History counts the requests of one site block or
// one crawler in a ring of per-minute buckets for the last hour and a ring
// of quarter-hour buckets for the last day.

import (
	"fmt"
	"html/template"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The two windows a History keeps.
const (
	hourBuckets, hourWidth = 60, 60      // 60 one-minute buckets
	dayBuckets, dayWidth   = 96, 15 * 60 // 96 quarter-hour buckets
)

// Outcome is what a counted request got, for a History.
type Outcome uint8

// The outcomes a History tells apart.
const (
	// Served: allowed, or refused for no fault of the crawler's (its
	// site's robots.txt unavailable): counted as a request only.
	Served Outcome = iota
	// Refused: refused (403) for what robots.txt forbids, or banned.
	Refused
	// Throttled: refused (503 with Retry-After) for coming faster than
	// its Crawl-delay.
	Throttled
)

// History counts requests, refusals and throttles over the last hour and
// the last day. Record is what the request path pays: two atomic loads and
// at most four atomic adds, and, once per bucket and minute at most, a
// mutex to start a bucket anew. Its memory is fixed (a few KiB), whatever
// the traffic. The zero History is not ready: use NewHistory.
type History struct {
	hour, day ring
}

// NewHistory returns an empty History.
func NewHistory() *History {
	return &History{
		hour: ring{width: hourWidth, buckets: make([]bucket, hourBuckets)},
		day:  ring{width: dayWidth, buckets: make([]bucket, dayBuckets)},
	}
}

// Record counts one request at now with its outcome.
func (h *History) Record(now time.Time, o Outcome) {
	if h == nil {
		return
	}
	sec := now.Unix()
	h.hour.add(sec, o)
	h.day.add(sec, o)
}

// ring is one window: len(buckets) buckets of width seconds each, the
// bucket of second s at (s/width) % len(buckets).
type ring struct {
	width   int64
	mu      sync.Mutex // held only to start a bucket anew
	buckets []bucket
}

// bucket counts one interval; n is the interval's number (unix seconds /
// width) plus one, so that the zero bucket belongs to no interval.
type bucket struct {
	n                            atomic.Int64
	requests, refused, throttled atomic.Uint64
}

// add counts one request at second sec. A bucket still holding an older
// interval's counts is cleared first, under the mutex, and only then
// marked as the new interval's: a concurrent add either sees the new mark
// (and adds after the clearing) or starts the bucket itself.
func (r *ring) add(sec int64, o Outcome) {
	n := sec/r.width + 1
	b := &r.buckets[n%int64(len(r.buckets))]
	if b.n.Load() != n && !r.start(b, n) {
		return // a newer interval has the bucket: too late to count
	}
	b.requests.Add(1)
	switch o {
	case Refused:
		b.refused.Add(1)
	case Throttled:
		b.throttled.Add(1)
	}
}

// start clears b for interval n, unless another add did already; it
// reports whether b holds n: not when it holds a newer interval (the
// caller's time was a window behind).
func (r *ring) start(b *bucket, n int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch cur := b.n.Load(); {
	case cur == n:
		return true
	case cur > n:
		return false
	}
	b.requests.Store(0)
	b.refused.Store(0)
	b.throttled.Store(0)
	b.n.Store(n)
	return true
}

// series reads the window ending with now's bucket; buckets of intervals
// older than the window (not counted into since) read as zero.
func (r *ring) series(now time.Time) Series {
	size := int64(len(r.buckets))
	last := now.Unix()/r.width + 1
	first := last - size + 1
	s := Series{
		BucketSeconds: int(r.width),
		From:          time.Unix((first-1)*r.width, 0).UTC(),
		Until:         time.Unix(last*r.width, 0).UTC(),
		Buckets:       []Bucket{},
		dense:         make([]Bucket, size),
	}
	for n := first; n <= last; n++ {
		d := &s.dense[n-first]
		d.Start = time.Unix((n-1)*r.width, 0).UTC()
		b := &r.buckets[n%size]
		if b.n.Load() != n {
			continue
		}
		d.Requests, d.Refused, d.Throttled = b.requests.Load(), b.refused.Load(), b.throttled.Load()
		if b.n.Load() != n { // started anew while read
			d.Requests, d.Refused, d.Throttled = 0, 0, 0
		}
	}
	s.fillSparse()
	return s
}

// Series is one window of a History: the counts per bucket, oldest first,
// the last bucket being the current one (still counting).
type Series struct {
	BucketSeconds int `json:"bucket_seconds"`
	// From is when the first bucket starts; Until when the current one
	// ends.
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
	// Buckets are the buckets that counted something: a quiet window
	// lists none (the JSON stays short), the page draws every bucket.
	Buckets []Bucket `json:"buckets"`
	dense   []Bucket
}

// Bucket is one interval's counts.
type Bucket struct {
	Start     time.Time `json:"start"`
	Requests  uint64    `json:"requests"`
	Refused   uint64    `json:"refused,omitempty"`
	Throttled uint64    `json:"throttled,omitempty"`
}

// fillSparse lists the dense buckets that counted something.
func (s *Series) fillSparse() {
	s.Buckets = []Bucket{}
	for _, b := range s.dense {
		if b.Requests > 0 {
			s.Buckets = append(s.Buckets, b)
		}
	}
}

// Total sums the window's buckets.
func (s Series) Total() Bucket {
	var t Bucket
	for _, b := range s.dense {
		t.Requests += b.Requests
		t.Refused += b.Refused
		t.Throttled += b.Throttled
	}
	return t
}

// HistoryStatus is a site block's history in GET /robots/status: its
// requests over the last hour and day, and each top crawler's.
type HistoryStatus struct {
	Hour Series `json:"hour"`
	Day  Series `json:"day"`
	// Crawlers are the top crawlers' histories (those of Top crawlers
	// that have one: a site block keeps the histories of a bounded number
	// of crawlers, the first seen), then "other": every other request.
	Crawlers []CrawlerHistory `json:"crawlers"`
}

// CrawlerHistory is one crawler's requests over the last hour and day.
type CrawlerHistory struct {
	// Crawler and Claim are as in CrawlerCount; Crawler is "other" (and
	// Other set) for the requests of the crawlers not listed.
	Crawler string `json:"crawler"`
	Claim   string `json:"claim,omitempty"`
	Other   bool   `json:"other,omitempty"`
	Hour    Series `json:"hour"`
	Day     Series `json:"day"`
}

// CrawlerSeries is a crawler's History, for HistoryOf.
type CrawlerSeries struct {
	Name, Claim string
	History     *History
}

// HistoryOf reads a site block's history at now: all are every History
// the site block keeps (each request is in exactly one of them: its
// crawler's, or the one of the crawlers without a history of their own),
// and their sum is the site block's; crawlers are the crawlers to list,
// in the order given, followed by "other", the sum of the histories in
// all that none of them has, when it counted requests.
func HistoryOf(all []*History, crawlers []CrawlerSeries, now time.Time) HistoryStatus {
	st := HistoryStatus{Crawlers: []CrawlerHistory{}}
	st.Hour, st.Day = sumOf(all, now)
	listed := map[*History]bool{}
	for _, c := range crawlers {
		if c.History == nil {
			continue
		}
		listed[c.History] = true
		st.Crawlers = append(st.Crawlers, CrawlerHistory{Crawler: c.Name, Claim: c.Claim, Hour: c.History.hour.series(now), Day: c.History.day.series(now)})
	}
	var rest []*History
	for _, h := range all {
		if !listed[h] {
			rest = append(rest, h)
		}
	}
	other := CrawlerHistory{Crawler: "other", Other: true}
	other.Hour, other.Day = sumOf(rest, now)
	if len(other.Day.Buckets) > 0 {
		st.Crawlers = append(st.Crawlers, other)
	}
	return st
}

// sumOf reads every History in all (nil ones skipped) at now and adds
// them up, bucket by bucket.
func sumOf(all []*History, now time.Time) (hour, day Series) {
	empty := NewHistory()
	hour, day = empty.hour.series(now), empty.day.series(now)
	for _, h := range all {
		if h != nil {
			hour.add(h.hour.series(now))
			day.add(h.day.series(now))
		}
	}
	hour.fillSparse()
	day.fillSparse()
	return hour, day
}

// add adds the counts of o, a series of the same window, to s's buckets
// (s.Buckets are left to fillSparse).
func (s *Series) add(o Series) {
	for i := range min(len(s.dense), len(o.dense)) {
		d, x := &s.dense[i], o.dense[i]
		d.Requests += x.Requests
		d.Refused += x.Refused
		d.Throttled += x.Throttled
	}
}

// Sparkline draws s as an inline SVG: a bar per bucket, its height the
// requests (scaled to the window's busiest bucket), refusals in red and
// throttles in orange from the bottom; one path per colour, so that a busy
// window stays a few KiB. No script, no external asset: the page's
// Content-Security-Policy allows none. Only numbers go into it.
func (s Series) Sparkline() template.HTML {
	const barW, height = 3, 28
	var peak uint64
	for _, b := range s.dense {
		peak = max(peak, b.Requests)
	}
	scale := func(n uint64) int {
		if n == 0 {
			return 0
		}
		return max(1, int(n*height/peak))
	}
	var requests, refused, throttled strings.Builder
	for i, b := range s.dense {
		x := i * barW
		// bar draws a bar of n from y0 up (from the bottom) and returns
		// its top.
		bar := func(p *strings.Builder, n uint64, y0 int) int {
			h := scale(n)
			if h > 0 {
				fmt.Fprintf(p, "M%d %dh%dv%dh-%dz", x, height-y0, barW-1, -h, barW-1)
			}
			return y0 + h
		}
		bar(&requests, b.Requests, 0)
		bar(&throttled, b.Throttled, bar(&refused, b.Refused, 0))
	}
	width := barW * len(s.dense)
	t := s.Total()
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="spark" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%d requests, %d refused, %d throttled">`,
		width, height, width, height, t.Requests, t.Refused, t.Throttled)
	fmt.Fprintf(&sb, `<rect width="%d" height="%d" fill="#eef1f6"/>`, width, height)
	for _, p := range []struct {
		d      *strings.Builder
		colour string
	}{{&requests, "#2f5fd0"}, {&refused, "#c62828"}, {&throttled, "#e08a00"}} {
		if p.d.Len() > 0 {
			fmt.Fprintf(&sb, `<path fill="%s" d="%s"/>`, p.colour, p.d.String())
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String()) // numbers only, written above
}
