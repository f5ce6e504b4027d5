package state

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// paceClock runs a schedule against a store: on virtual time, or on real
// time (sleeping until each offset) for a Redis store whose keys expire on
// its own clock (strike windows and bans).
type paceClock struct {
	real  bool
	start time.Time
}

func newPaceClock(real bool) *paceClock {
	if real {
		return &paceClock{real: true, start: time.Now().Add(20 * time.Millisecond)}
	}
	return &paceClock{start: epoch}
}

func (c *paceClock) at(off time.Duration) time.Time {
	if !c.real {
		return c.start.Add(off)
	}
	time.Sleep(time.Until(c.start.Add(off)))
	return time.Now()
}

func mustPace(t testing.TB, s Store, id Identity, p Pace, now time.Time) ThrottleResult {
	t.Helper()
	r, err := s.ThrottlePace(ctx0, id, p, now)
	if err != nil {
		t.Fatalf("ThrottlePace: %v", err)
	}
	return r
}

// firstThrottled sends one request per gap (the first at 0), on virtual
// time, and returns the 1-based number of the first refused request, 0 if
// none is.
func firstThrottled(t testing.TB, s Store, id Identity, p Pace, gaps []time.Duration) int {
	t.Helper()
	c := newPaceClock(false)
	off := time.Duration(0)
	for i, g := range gaps {
		if i > 0 {
			off += g
		}
		if r := mustPace(t, s, id, p, c.at(off)); !r.Allowed {
			return i + 1
		}
	}
	return 0
}

// scrapyGaps are n gaps uniform in 0.5–1.5×T (Scrapy's
// RANDOMIZE_DOWNLOAD_DELAY; its mean is exactly T).
func scrapyGaps(rng *rand.Rand, T time.Duration, n int) []time.Duration {
	g := make([]time.Duration, n)
	for i := range g {
		g[i] = T/2 + time.Duration(rng.Int64N(int64(T)+1))
	}
	return g
}

// wgetRandomWaitGaps are wget --random-wait gaps: (0.5 + U[0,1))×wait
// after each download, and each download takes 5–60ms.
func wgetRandomWaitGaps(rng *rand.Rand, T time.Duration, n int) []time.Duration {
	g := make([]time.Duration, n)
	for i := range g {
		g[i] = time.Duration((0.5+rng.Float64())*float64(T)) + 5*time.Millisecond + time.Duration(rng.Int64N(int64(55*time.Millisecond)))
	}
	return g
}

func constGaps(gap time.Duration, n int) []time.Duration {
	g := make([]time.Duration, n)
	for i := range g {
		g[i] = gap
	}
	return g
}

// paceStores are the stores the pace tests run on, both on virtual time:
// the memory store, and a real Redis told to decide at the time it is
// given (newVirtualRedisStore), so each makes the same decisions at any
// load of the machine.
func paceStores() map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemory(MemoryConfig{}) },
		"redis":  func(t *testing.T) Store { return newVirtualRedisStore(t, sharedRedis(t), "pace") },
	}
}

func TestPaceBurstDefaults(t *testing.T) {
	if DefaultBurst != 4 || PaceSlack != 8 {
		t.Fatalf("defaults changed: update the doc comments and the README figures")
	}
	em, tau := Pace{Interval: time.Second, Burst: 4}.gcra()
	if em != 875*time.Millisecond || tau != 3*875*time.Millisecond+500*time.Millisecond {
		t.Fatalf("gcra() = %v, %v", em, tau)
	}
	if em, tau := (Pace{Interval: 3 * time.Second}).gcra(); em != 3*time.Second || tau != time.Second {
		t.Fatalf("Burst 0 is Throttle's GCRA: got %v, %v", em, tau)
	}
}

// TestPaceJitteringCrawlersAreNeverThrottled simulates crawlers that honour
// Crawl-delay on average while randomising each gap, on virtual time.
func TestPaceJitteringCrawlersAreNeverThrottled(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	for _, T := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second} {
		p := Pace{Interval: T, Burst: DefaultBurst}
		for seed := uint64(1); seed <= 8; seed++ {
			rng := rand.New(rand.NewPCG(seed, 0x5c7a9))
			id := NewIdentity("Scrapy", false, ip4(uint32(seed)))
			id.Site = T.String()
			if n := firstThrottled(t, m, id, p, scrapyGaps(rng, T, 300)); n != 0 {
				t.Errorf("Scrapy-like crawler (T=%v, seed %d) throttled at request %d of 300", T, seed, n)
			}
			id.Name = "Wget"
			if n := firstThrottled(t, m, id, p, wgetRandomWaitGaps(rng, T, 300)); n != 0 {
				t.Errorf("wget --random-wait crawler (T=%v, seed %d) throttled at request %d of 300", T, seed, n)
			}
		}
	}
}

// TestPaceJitterWithoutBurstIsThrottled shows why the burst exists: the
// same Scrapy-like runs under gap-by-gap GCRA (Burst 1) are throttled.
func TestPaceJitterWithoutBurstIsThrottled(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	throttled := 0
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5c7a9))
		id := NewIdentity("Scrapy", false, ip4(uint32(seed)))
		if firstThrottled(t, m, id, Pace{Interval: time.Second}, scrapyGaps(rng, time.Second, 300)) != 0 {
			throttled++
		}
	}
	if throttled < 7 {
		t.Errorf("only %d of 8 jittering runs throttled under Burst 1", throttled)
	}
}

func TestPaceCrawlersThatIgnoreTheDelay(t *testing.T) {
	for name, open := range paceStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			T := time.Second
			for _, b := range []int{1, 2, DefaultBurst, 7} {
				p := Pace{Interval: T, Burst: b}
				id := NewIdentity("NoDelayBot", false, ip4(uint32(100+b)))
				if n := firstThrottled(t, s, id, p, constGaps(0, 20)); n != b+1 {
					t.Errorf("Burst %d: a crawler with no delay was first throttled at request %d, want %d", b, n, b+1)
				}
			}
			// 0.8× the delay: throttled eventually, not at once.
			id := NewIdentity("EagerBot", false, ip4(200))
			n := firstThrottled(t, s, id, Pace{Interval: T, Burst: DefaultBurst}, constGaps(T*8/10, 200))
			if n <= DefaultBurst+1 || n == 0 || n > 120 {
				t.Errorf("a crawler at 0.8× the delay was first throttled at request %d, want within 120 but not at once", n)
			}
			t.Logf("%s: crawler at 0.8× delay first throttled at request %d", name, n)
		})
	}
}

// TestPaceRedisJitter runs Scrapy-like and wget --random-wait schedules
// through a real Redis on virtual time (see newVirtualRedisStore): its
// script never throttles them either.
func TestPaceRedisJitter(t *testing.T) {
	s := newVirtualRedisStore(t, sharedRedis(t), "pace-jitter")
	for _, T := range []time.Duration{time.Second, 10 * time.Second} {
		p := Pace{Interval: T, Burst: DefaultBurst}
		for seed := uint64(1); seed <= 2; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			id := NewIdentity("Scrapy", false, ip4(uint32(300+seed)))
			id.Site = T.String()
			if n := firstThrottled(t, s, id, p, scrapyGaps(rng, T, 300)); n != 0 {
				t.Errorf("T=%v, seed %d: Scrapy-like crawler throttled at request %d of 300 on Redis", T, seed, n)
			}
			id.Name = "Wget"
			if n := firstThrottled(t, s, id, p, wgetRandomWaitGaps(rng, T, 300)); n != 0 {
				t.Errorf("T=%v, seed %d: wget --random-wait crawler throttled at request %d of 300 on Redis", T, seed, n)
			}
		}
	}
}

// TestPaceBurstOneIsThrottle checks that Throttle is ThrottlePace with
// Burst 1, decision for decision, on random schedules.
func TestPaceBurstOneIsThrottle(t *testing.T) {
	a, b := NewMemory(MemoryConfig{}), NewMemory(MemoryConfig{})
	rng := rand.New(rand.NewPCG(9, 9))
	id := NewIdentity("x", true, netip.Addr{})
	T := 2 * time.Second
	now := epoch
	for i := range 5000 {
		now = now.Add(time.Duration(rng.Int64N(int64(T))))
		ra := mustThrottle(t, a, id, T, now)
		rb := mustPace(t, b, id, Pace{Interval: T, Burst: 1}, now)
		if ra != rb {
			t.Fatalf("request %d: Throttle %+v, ThrottlePace %+v", i, ra, rb)
		}
	}
}

// TestPaceHeadThenGet: a GET right after a HEAD of the same URL rides on
// the HEAD's slot, once, within the pairing window; ht://Dig's HEAD+GET per
// page at the delay is never throttled.
func TestPaceHeadThenGet(t *testing.T) {
	for name, open := range paceStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			T := time.Second
			c := newPaceClock(false)
			id := NewIdentity("htdig", false, ip4(7))
			u1, u2 := "/a.html", "/b.html"
			step := func(off time.Duration, method, target string, allowed, paired bool) {
				t.Helper()
				p := Pace{Interval: T, Fetch: NewFetch(method, "example.com", target)}
				r := mustPace(t, s, id, p, c.at(off))
				if r.Allowed != allowed || r.Paired != paired {
					t.Fatalf("%s %s at %v: %+v, want allowed=%v paired=%v", method, target, off, r, allowed, paired)
				}
			}
			step(0, "HEAD", u1, true, false)
			step(T/10, "GET", u1, true, true)
			step(T/5, "GET", u1, false, false) // one GET per HEAD
			step(T, "HEAD", u2, true, false)
			step(T+T/10, "GET", u1, false, false) // another URL's HEAD
			step(T+T/5, "GET", u2, true, true)
			step(2*T, "POST", u2, true, false) // other methods pair nothing

			// Past the window, a GET is a fetch of its own.
			step(3*T, "HEAD", u1, true, false)
			step(3*T+FetchPairWindow+time.Millisecond, "GET", u1, true, false)

			// ht://Dig: HEAD then GET of each page, a page every T.
			dig := NewIdentity("htdig", false, ip4(8))
			for i := range 200 {
				at := epoch.Add(time.Hour + time.Duration(i)*T)
				u := "/page" + string(rune('a'+i%26)) + ".html"
				for _, m := range []string{"HEAD", "GET"} {
					p := Pace{Interval: T, Burst: DefaultBurst, Fetch: NewFetch(m, "example.com", u)}
					if r := mustPace(t, s, dig, p, at.Add(30*time.Millisecond)); !r.Allowed {
						t.Fatalf("page %d %s refused: %+v", i, m, r)
					}
					at = at.Add(30 * time.Millisecond)
				}
			}
		})
	}
}

// TestPaceRetry: a request for the URL that was just refused, inside that
// refusal's Retry-After, is a retry; a request for another URL is not, nor
// is one after the Retry-After, nor one without a Fetch. PeekPace agrees
// and changes nothing.
func TestPaceRetry(t *testing.T) {
	for name, open := range paceStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			T := 2 * time.Second
			c := newPaceClock(false)
			id := NewIdentity("impatient", false, ip4(9))
			get := func(u string) Pace { return Pace{Interval: T, Fetch: NewFetch("GET", "example.com", u)} }
			if r := mustPace(t, s, id, get("/a"), c.at(0)); !r.Allowed || r.Retry {
				t.Fatalf("first: %+v", r)
			}
			r := mustPace(t, s, id, get("/b"), c.at(T/10))
			if r.Allowed || r.Retry || r.RetryAfter <= 0 {
				t.Fatalf("second (first refusal, not a retry): %+v", r)
			}
			wait := r.RetryAfter
			peek := s.(PacePeeker)
			for range 3 { // peeking neither marks nor spends
				if r, err := peek.PeekPace(ctx0, id, get("/b"), c.at(T/10+wait/4)); err != nil || r.Allowed || !r.Retry {
					t.Fatalf("peek at /b inside Retry-After: %+v %v, want refused retry", r, err)
				}
				if r, err := peek.PeekPace(ctx0, id, get("/c"), c.at(T/10+wait/4)); err != nil || r.Allowed || r.Retry {
					t.Fatalf("peek at /c inside Retry-After: %+v %v, want refused, not a retry", r, err)
				}
			}
			if r := mustPace(t, s, id, get("/b"), c.at(T/10+wait/2)); r.Allowed || !r.Retry {
				t.Fatalf("/b again inside Retry-After: %+v, want refused retry", r)
			}
			// The client moves on: the next URL is refused, not a retry, and
			// from then on only that URL counts as retried.
			if r := mustPace(t, s, id, get("/c"), c.at(T/10+wait*6/10)); r.Allowed || r.Retry {
				t.Fatalf("/c inside Retry-After: %+v, want refused, not a retry", r)
			}
			if r := mustPace(t, s, id, get("/b"), c.at(T/10+wait*7/10)); r.Allowed || r.Retry {
				t.Fatalf("/b after /c was refused: %+v, want refused, not a retry", r)
			}
			if r := mustPace(t, s, id, Pace{Interval: T}, c.at(T/10+wait*8/10)); r.Allowed || r.Retry {
				t.Fatalf("no Fetch inside Retry-After: %+v, want refused, not a retry", r)
			}
			if r := mustPace(t, s, id, Pace{Interval: T}, c.at(T/10+wait*85/100)); r.Allowed || r.Retry {
				t.Fatalf("no Fetch again: %+v, want refused, not a retry (a zero key matches nothing)", r)
			}
			if r := mustPace(t, s, id, get("/b"), c.at(T/10+wait+T/20)); !r.Allowed || r.Retry {
				t.Fatalf("after Retry-After: %+v, want allowed, no retry", r)
			}
		})
	}
}

// TestPaceRetryWgetMovingOn: wget with no wait, throttled, moves on to the
// next URL each time (it never retries): none of its requests is a retry.
func TestPaceRetryWgetMovingOn(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("Wget", false, ip4(10))
	refused := 0
	for i := range 30 {
		p := Pace{Interval: 10 * time.Second, Burst: DefaultBurst, Fetch: NewFetch("GET", "example.com", "/page"+string(rune('a'+i%26))+string(rune('a'+i/26)))}
		r := mustPace(t, m, id, p, epoch.Add(time.Duration(i)*50*time.Millisecond))
		if r.Retry {
			t.Fatalf("request %d for a new URL counted as a retry: %+v", i, r)
		}
		if !r.Allowed {
			refused++
		}
	}
	if refused != 30-DefaultBurst {
		t.Fatalf("%d refused, want %d", refused, 30-DefaultBurst)
	}
}

// TestPaceRedisAgreesWithMemory runs one schedule with Burst, HEAD/GET
// pairs and retries, then a random one, through Redis and the memory store
// on virtual time (see newVirtualRedisStore): every result agrees exactly.
func TestPaceRedisAgreesWithMemory(t *testing.T) {
	r := newVirtualRedisStore(t, sharedRedis(t), "pace-agree")
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("agree", false, netip.MustParseAddr("198.51.100.9"))
	T := 200 * time.Millisecond // E = 175ms, τ(B=2) = 275ms
	type req struct {
		ms     int
		method string
		url    string
	}
	sched := []req{
		{0, "GET", "/a"},    // allowed, TAT 175
		{10, "GET", "/b"},   // allowed, TAT 350
		{20, "HEAD", "/c"},  // refused (330 > 275), Retry-After ends at 75
		{50, "GET", "/c"},   // refused, a retry; not paired (its HEAD was refused)
		{120, "HEAD", "/d"}, // allowed, TAT 525
		{140, "GET", "/d"},  // paired
		{160, "GET", "/e"},  // refused (365 > 275), Retry-After ends at 250
		{200, "GET", "/e"},  // refused, a retry
		{400, "GET", "/f"},  // allowed, TAT 700
		{1500, "GET", "/h"}, // allowed
	}
	var allowed, refused, retries, paired int
	decide := func(at time.Duration, p Pace, what string) {
		t.Helper()
		mr := mustPace(t, m, id, p, epoch.Add(at))
		rr := mustPace(t, r, id, p, epoch.Add(at))
		if mr != rr {
			t.Fatalf("at %v %s: memory %+v, redis %+v", at, what, mr, rr)
		}
		if mr.Allowed {
			allowed++
		} else {
			refused++
		}
		if mr.Retry {
			retries++
		}
		if mr.Paired {
			paired++
		}
	}
	for _, q := range sched {
		decide(time.Duration(q.ms)*time.Millisecond, Pace{Interval: T, Burst: 2, Fetch: NewFetch(q.method, "h", q.url)}, q.method+" "+q.url)
	}
	if allowed == 0 || refused == 0 || retries == 0 || paired == 0 {
		t.Fatalf("schedule did not exercise every outcome: %d allowed, %d refused, %d retries, %d paired", allowed, refused, retries, paired)
	}
	// Random requests: bursts of 1, 2 and 4, HEAD, GET and POST of five
	// URLs, gaps in whole microseconds uniform in [0, T).
	rng := rand.New(rand.NewPCG(11, 12))
	at := 2 * time.Second
	for range 2000 {
		at += time.Duration(rng.Int64N(int64(T))).Truncate(time.Microsecond)
		method := []string{"HEAD", "GET", "GET", "POST"}[rng.IntN(4)]
		u := "/" + string(rune('a'+rng.IntN(5)))
		p := Pace{Interval: T, Burst: []int{1, 2, DefaultBurst}[rng.IntN(3)], Fetch: NewFetch(method, "h", u)}
		decide(at, p, fmt.Sprintf("%s %s burst %d", method, u, p.Burst))
	}
	t.Logf("%d allowed, %d refused, %d retries, %d paired: memory and Redis agree on each", allowed, refused, retries, paired)
}

func TestNewFetch(t *testing.T) {
	a, b := NewFetch("HEAD", "example.com", "/x?y=1"), NewFetch("GET", "example.com", "/x?y=1")
	if a.Key == 0 || a.Key != b.Key || !a.Head || b.Head {
		t.Fatalf("HEAD %+v and GET %+v of one URL", a, b)
	}
	if NewFetch("GET", "example.com", "/x?y=2").Key == b.Key || NewFetch("GET", "example.co", "m/x?y=1").Key == b.Key {
		t.Fatal("different URLs share a key")
	}
	if f := NewFetch("POST", "example.com", "/x"); f != (Fetch{}) {
		t.Fatalf("POST: %+v", f)
	}
}
