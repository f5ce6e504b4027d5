package state

import "time"

// DefaultBurst is the Burst that [Pace] callers should use unless the
// operator chose another: a crawler that ignores Crawl-delay gets its first
// 4 requests and is throttled from the 5th, while crawlers that randomise
// each gap around the delay (Scrapy's RANDOMIZE_DOWNLOAD_DELAY, wget
// --random-wait: 0.5 to 1.5 times the delay) are not throttled.
const DefaultBurst = 4

// MaxBurst caps [Pace].Burst.
const MaxBurst = 100

// PaceSlack is the share of the interval that a crawler's long-run average
// gap may fall short of it when Burst >= 2: the average is judged against
// Interval·(1 - 1/PaceSlack), 7/8 of the interval.
//
// Without slack, a crawler whose gaps vary around exactly the delay (mean
// gap = delay) drifts like a random walk and sooner or later runs ahead of
// any fixed burst: with gaps uniform in 0.5–1.5× the delay and a burst of 4,
// 85% of 300-request runs would be throttled at least once. Judged against
// 7/8 of the delay, such a run is throttled with probability about 0.14%
// (1.75% over 3,000 requests), while a crawler keeping 0.8× the delay is
// still throttled, after about 40 requests.
const PaceSlack = 8

// FetchPairWindow is how long after an allowed HEAD a GET of the same URL
// from the same identity is counted as the same fetch (see [Fetch]).
const FetchPairWindow = 5 * time.Second

// Pace is what [Store.ThrottlePace] enforces: one request every Interval on
// average, judged over a window rather than gap by gap.
//
// It is GCRA with emission interval E and tolerance τ. With Burst B <= 1,
// E = Interval and τ = [Tolerance](Interval): each gap may only be short by
// the jitter tolerance, which is exactly [Store.Throttle]. With B >= 2,
// E = Interval·7/8 (see [PaceSlack]) and τ = (B-1)·E + Tolerance(Interval).
// The rule is then: a run of n consecutive requests of the identity,
// spanning time s from its first to its last request, is allowed as long as
// (n-1)·E <= s + τ. So a crawler whose average gap over its recent requests
// is at least 7/8 of the interval is never throttled; one that ignores the
// delay gets B requests back to back and is throttled from the (B+1)-th;
// one that keeps any constant rate faster than 8/7 of the asked rate is
// throttled after about (B-1)·E/(E-gap) requests. The window is therefore
// not a fixed time but "as far back as the crawler has kept running early":
// arriving late never banks credit, arriving early spends the burst.
type Pace struct {
	// Interval is the emission interval: the stricter of Crawl-delay and
	// Request-rate. <= 0 allows everything and keeps no state.
	Interval time.Duration
	// Burst is how many requests may come back to back: 1 (or less) for
	// strict gap-by-gap enforcement, [DefaultBurst] for the windowed
	// judgement; capped at [MaxBurst].
	Burst int
	// Fetch, when set, lets a GET right after a HEAD of the same URL ride
	// on the HEAD's slot; the zero Fetch counts every request.
	Fetch Fetch
}

// gcra returns the emission interval and tolerance of p.
func (p Pace) gcra() (emission, tau time.Duration) {
	j := Tolerance(p.Interval)
	if p.Burst <= 1 {
		return p.Interval, j
	}
	b := min(p.Burst, MaxBurst)
	emission = p.Interval - p.Interval/PaceSlack
	return emission, time.Duration(b-1)*emission + j
}

// Fetch identifies the resource a request fetches, so that a HEAD and the
// GET that follows it count as one fetch. ht://Dig, some link checkers and
// some archivers send a HEAD, then a GET of the same URL, for every page.
//
// A GET whose Key equals that of the last HEAD the identity was allowed,
// within [FetchPairWindow] after it, is allowed without taking a new slot
// (and only one GET per HEAD). Every other request, HEAD included, takes a
// slot as usual. The zero Fetch (Key 0) pairs nothing.
type Fetch struct {
	// Key is a hash of the URL without the method; 0 means none.
	Key uint64
	// Head is true for HEAD, false for GET.
	Head bool
}

// NewFetch returns the Fetch of a request: for GET and HEAD a 64-bit FNV-1a
// hash of host and target (path and query), stable across processes so
// that instances sharing a Redis agree; for any other method the zero
// Fetch.
func NewFetch(method, host, target string) Fetch {
	var head bool
	switch method {
	case "GET":
	case "HEAD":
		head = true
	default:
		return Fetch{}
	}
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(host); i++ {
		h = (h ^ uint64(host[i])) * prime
	}
	h *= prime // a zero octet between host and target: no split collides
	for i := 0; i < len(target); i++ {
		h = (h ^ uint64(target[i])) * prime
	}
	if h == 0 {
		h = 1
	}
	return Fetch{Key: h, Head: head}
}
