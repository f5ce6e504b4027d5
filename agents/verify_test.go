package agents

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testClock is a clock tests set by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newVerifyClock(s string) *testClock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &testClock{t: t}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func verifyAgent(key string) Agent {
	return Agent{Bot: true, Known: true, Name: key, Profile: Profile{Verify: key}}
}

func newTestVerifier(t *testing.T, f *fakeDNS, cfg VerifierConfig) *Verifier {
	t.Helper()
	if f != nil {
		cfg.Resolver = f.Resolver()
	}
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// reverseDNSZone gives f the records of TestVerifyReverseDNS: addresses
// of genuine crawlers, of clients provably not the operator they claim,
// and of clients that cannot be told.
func reverseDNSZone(t *testing.T, f *fakeDNS) {
	// Genuine crawlers.
	f.PTR("192.0.2.10", "crawl-192-0-2-10.googlebot.com")
	f.Host("crawl-192-0-2-10.googlebot.com", "192.0.2.10")
	f.PTR("192.0.2.11", "CRAWL-192-0-2-11.GOOGLEBOT.COM.") // upper case, trailing dot
	f.Host("crawl-192-0-2-11.googlebot.com", "192.0.2.11")
	f.PTR("192.0.2.12", "host.example.net", "rate-limited-proxy-192-0-2-12.google.com") // second name matches
	f.Host("rate-limited-proxy-192-0-2-12.google.com", "198.51.100.7", "192.0.2.12")
	f.PTR("192.0.2.13", "googlebot.com") // the suffix itself
	f.Host("googlebot.com", "192.0.2.13")
	f.PTR("2001:db8::10", "crawl-2001-db8--10.googlebot.com")
	f.Host("crawl-2001-db8--10.googlebot.com", "2001:db8::10", "192.0.2.200")
	f.PTR("192.0.2.14", "msnbot-192-0-2-14.search.msn.com")
	f.Host("msnbot-192-0-2-14.search.msn.com", "192.0.2.14")
	f.PTR("192.0.2.15", "lj612134.crawl.yahoo.net")
	f.Host("lj612134.crawl.yahoo.net", "192.0.2.15")

	// Provably not the operator.
	// 192.0.2.20: no PTR at all (NXDOMAIN is the server's default).
	f.PTR("192.0.2.21") // NOERROR, no PTR records
	f.PTR("192.0.2.22", "crawl-1-2-3-4.googlebot.com")
	f.Host("crawl-1-2-3-4.googlebot.com", "1.2.3.4") // lying PTR
	f.PTR("192.0.2.23", "googlebot.com.evil.example")
	f.Host("googlebot.com.evil.example", "192.0.2.23")
	f.PTR("192.0.2.24", "evilgooglebot.com")
	f.Host("evilgooglebot.com", "192.0.2.24")
	f.PTR("192.0.2.25", "crawl-192-0-2-25.googlebot.com") // forward NXDOMAIN
	f.PTR("192.0.2.26", "crawl-192-0-2-26.googlebot.com")
	f.Host("crawl-192-0-2-26.googlebot.com") // forward NOERROR, no data
	f.PTR("2001:db8::20", "crawl-2001-db8--20.googlebot.com")
	f.Host("crawl-2001-db8--20.googlebot.com", "2001:db8::99", "192.0.2.26") // lying AAAA
	f.PTR("192.0.2.27", "1-2-3-4.bc.googleusercontent.com")
	f.Host("1-2-3-4.bc.googleusercontent.com", "192.0.2.27") // a cloud VM
	// 192.0.2.10 is a real Googlebot but not a Bing one.

	// Could not tell.
	f.Rcode(reverseName(t, "192.0.2.30"), dns.RcodeServerFailure)
	f.Rcode(reverseName(t, "192.0.2.31"), dns.RcodeRefused)
	f.PTR("192.0.2.32", "slow")
	f.Delay(reverseName(t, "192.0.2.32"), 3*time.Second)
	f.PTR("192.0.2.33", "crawl-192-0-2-33.googlebot.com")
	f.Rcode("crawl-192-0-2-33.googlebot.com", dns.RcodeServerFailure) // forward SERVFAIL
	f.PTR("192.0.2.34", "crawl-192-0-2-34.googlebot.com")
	f.Host("crawl-192-0-2-34.googlebot.com", "192.0.2.34")
	f.Delay("crawl-192-0-2-34.googlebot.com", 3*time.Second) // forward too slow
	f.Rcode(reverseName(t, "2001:db8::30"), dns.RcodeServerFailure)
}

func TestVerifyReverseDNS(t *testing.T) {
	f := newFakeDNS(t)
	reverseDNSZone(t, f)

	v := newTestVerifier(t, f, VerifierConfig{Timeout: time.Second})
	tests := []struct {
		method, ip string
		want       Verdict
	}{
		{"google-common", "192.0.2.10", Verified},
		{"google-common", "::ffff:192.0.2.10", Verified}, // IPv4-mapped form of a verified address
		{"google-common", "192.0.2.11", Verified},
		{"google-common", "192.0.2.12", Verified},
		{"google-special", "192.0.2.12", Verified},
		{"google-common", "192.0.2.13", Verified},
		{"google-common", "2001:db8::10", Verified},
		{"bingbot", "192.0.2.14", Verified},
		{"yahoo-slurp", "192.0.2.15", Verified},

		{"google-common", "192.0.2.20", Spoofed},
		{"google-common", "192.0.2.21", Spoofed},
		{"google-common", "192.0.2.22", Spoofed},
		{"google-common", "192.0.2.23", Spoofed},
		{"google-common", "192.0.2.24", Spoofed},
		{"google-common", "192.0.2.25", Spoofed},
		{"google-common", "192.0.2.26", Spoofed},
		{"google-common", "2001:db8::20", Spoofed},
		{"google-user-triggered", "192.0.2.27", Spoofed},
		{"google-special", "192.0.2.10", Spoofed}, // googlebot.com is not a special-crawler domain
		{"bingbot", "192.0.2.10", Spoofed},

		{"google-common", "192.0.2.30", Unverified},
		{"google-common", "192.0.2.31", Unverified},
		{"google-common", "192.0.2.32", Unverified},
		{"google-common", "192.0.2.33", Unverified},
		{"google-common", "192.0.2.34", Unverified},
		{"google-common", "2001:db8::30", Unverified},
		{"", "192.0.2.10", Unverified},
		{"no-such-method", "192.0.2.10", Unverified},
	}
	for _, tt := range tests {
		t.Run(tt.method+"/"+tt.ip, func(t *testing.T) {
			got := v.Verify(context.Background(), verifyAgent(tt.method), netip.MustParseAddr(tt.ip))
			if got != tt.want {
				t.Errorf("Verify(%s, %s) = %v, want %v", tt.method, tt.ip, got, tt.want)
			}
		})
	}
	if got := v.Verify(context.Background(), verifyAgent("google-common"), netip.Addr{}); got != Unverified {
		t.Errorf("invalid address: %v", got)
	}
	// Addresses that are not public are a proxy's, never judged.
	before := f.Total()
	for _, ip := range []string{"10.1.2.3", "127.0.0.1", "192.168.1.1", "169.254.1.1", "::1", "fe80::1", "fd00::1", "0.0.0.0", "224.0.0.1"} {
		for _, m := range []string{"google-common", "openai-gptbot"} {
			if got := v.Verify(context.Background(), verifyAgent(m), netip.MustParseAddr(ip)); got != Unverified {
				t.Errorf("%s from %s: %v, want unverified", m, ip, got)
			}
		}
	}
	if n := f.Total() - before; n != 0 {
		t.Errorf("non-public addresses caused %d DNS queries", n)
	}
}

func TestVerifyCallerContext(t *testing.T) {
	f := newFakeDNS(t)
	f.PTR("192.0.2.40", "crawl-192-0-2-40.googlebot.com")
	f.Host("crawl-192-0-2-40.googlebot.com", "192.0.2.40")
	f.Delay(reverseName(t, "192.0.2.40"), 300*time.Millisecond)
	v := newTestVerifier(t, f, VerifierConfig{})
	ip := netip.MustParseAddr("192.0.2.40")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if got := v.Verify(ctx, verifyAgent("google-common"), ip); got != Unverified {
		t.Errorf("caller giving up: %v, want unverified", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("caller with a 20ms context waited %v", d)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if got := v.Verify(done, verifyAgent("google-common"), netip.MustParseAddr("192.0.2.41")); got != Unverified {
		t.Errorf("cancelled context: %v", got)
	}
	// The lookup went on in the background; a later caller gets its result
	// from the same single query.
	if got := v.Verify(context.Background(), verifyAgent("google-common"), ip); got != Verified {
		t.Errorf("after background lookup: %v, want verified", got)
	}
	if n := f.Count(dns.TypePTR, reverseName(t, "192.0.2.40")); n != 1 {
		t.Errorf("PTR queries = %d, want 1", n)
	}
	if n := f.Count(dns.TypePTR, reverseName(t, "192.0.2.41")); n != 0 {
		t.Errorf("a cancelled context still started a lookup (%d queries)", n)
	}
}

func TestVerifySingleflight(t *testing.T) {
	f := newFakeDNS(t)
	ip := "192.0.2.50"
	f.PTR(ip, "crawl-192-0-2-50.googlebot.com")
	f.Host("crawl-192-0-2-50.googlebot.com", ip)
	f.Delay(reverseName(t, ip), 200*time.Millisecond)
	v := newTestVerifier(t, f, VerifierConfig{})

	const n = 64
	var wg sync.WaitGroup
	results := make([]Verdict, n)
	for i := range n {
		wg.Go(func() {
			results[i] = v.Verify(context.Background(), verifyAgent("google-common"), netip.MustParseAddr(ip))
		})
	}
	// A waiter with a short deadline leaves early without disturbing the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if got := v.Verify(ctx, verifyAgent("google-common"), netip.MustParseAddr(ip)); got != Unverified {
		t.Errorf("impatient waiter: %v", got)
	}
	wg.Wait()
	for i, r := range results {
		if r != Verified {
			t.Fatalf("caller %d: %v", i, r)
		}
	}
	if q := f.Count(dns.TypePTR, reverseName(t, ip)); q != 1 {
		t.Errorf("%d concurrent verifications made %d PTR queries, want 1", n, q)
	}
	if q := f.Count(dns.TypeA, "crawl-192-0-2-50.googlebot.com"); q != 1 {
		t.Errorf("forward queries = %d, want 1", q)
	}
	if left := len(v.slots); left != 0 {
		t.Errorf("%d lookups left in flight", left)
	}
}

func TestVerifyMaxLookups(t *testing.T) {
	f := newFakeDNS(t)
	f.PTR("192.0.2.60", "x.googlebot.com")
	f.Delay(reverseName(t, "192.0.2.60"), 2*time.Second)
	v := newTestVerifier(t, f, VerifierConfig{MaxLookups: 1})
	go v.Verify(context.Background(), verifyAgent("google-common"), netip.MustParseAddr("192.0.2.60"))
	deadline := time.Now().Add(2 * time.Second)
	for f.Count(dns.TypePTR, reverseName(t, "192.0.2.60")) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if got := v.Verify(context.Background(), verifyAgent("google-common"), netip.MustParseAddr("192.0.2.61")); got != Unverified {
		t.Errorf("over MaxLookups: %v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("over MaxLookups waited %v", d)
	}
	if n := f.Count(dns.TypePTR, reverseName(t, "192.0.2.61")); n != 0 {
		t.Errorf("over MaxLookups still queried (%d)", n)
	}
}

func TestVerifyCacheTTL(t *testing.T) {
	f := newFakeDNS(t)
	f.PTR("192.0.2.70", "crawl-192-0-2-70.googlebot.com")
	f.Host("crawl-192-0-2-70.googlebot.com", "192.0.2.70")
	// 192.0.2.71: NXDOMAIN.
	f.Rcode(reverseName(t, "192.0.2.72"), dns.RcodeServerFailure)
	clock := newVerifyClock("2026-11-22T08:00:00Z")
	v := newTestVerifier(t, f, VerifierConfig{
		Now:         clock.Now,
		PositiveTTL: time.Hour,
		NegativeTTL: 10 * time.Minute,
		ErrorTTL:    time.Minute,
	})
	// Go's resolver retries a SERVFAIL, so a lookup may cost several
	// queries: count lookups in units of the first lookup's queries.
	perLookup := map[string]int{}
	check := func(ip string, want Verdict, wantLookups int) {
		t.Helper()
		if got := v.Verify(context.Background(), verifyAgent("google-common"), netip.MustParseAddr(ip)); got != want {
			t.Errorf("%s: %v, want %v", ip, got, want)
		}
		n := f.Count(dns.TypePTR, reverseName(t, ip))
		if perLookup[ip] == 0 {
			perLookup[ip] = n
		}
		if n != wantLookups*perLookup[ip] {
			t.Errorf("%s: %d PTR queries, want %d lookups of %d", ip, n, wantLookups, perLookup[ip])
		}
	}
	check("192.0.2.70", Verified, 1)
	check("192.0.2.71", Spoofed, 1)
	check("192.0.2.72", Unverified, 1)
	check("192.0.2.70", Verified, 1)
	check("192.0.2.71", Spoofed, 1)
	check("192.0.2.72", Unverified, 1)

	clock.Advance(time.Minute) // failures expire
	check("192.0.2.70", Verified, 1)
	check("192.0.2.71", Spoofed, 1)
	check("192.0.2.72", Unverified, 2)

	clock.Advance(10 * time.Minute) // negatives expire
	check("192.0.2.70", Verified, 1)
	check("192.0.2.71", Spoofed, 2)

	clock.Advance(time.Hour) // positives expire
	check("192.0.2.70", Verified, 2)

	// The cache is per method: the same address under another method is
	// looked up again.
	if got := v.Verify(context.Background(), verifyAgent("bingbot"), netip.MustParseAddr("192.0.2.70")); got != Spoofed {
		t.Errorf("bingbot from a googlebot address: %v", got)
	}
	if n := f.Count(dns.TypePTR, reverseName(t, "192.0.2.70")); n != 3 {
		t.Errorf("PTR queries = %d, want 3", n)
	}
}

func TestVerifyErrorTTLDisabled(t *testing.T) {
	f := newFakeDNS(t)
	f.Rcode(reverseName(t, "192.0.2.80"), dns.RcodeServerFailure)
	v := newTestVerifier(t, f, VerifierConfig{ErrorTTL: -1})
	// Go's resolver retries a SERVFAIL; each Verify is a new lookup.
	v.Verify(context.Background(), verifyAgent("google-common"), netip.MustParseAddr("192.0.2.80"))
	one := f.Count(dns.TypePTR, reverseName(t, "192.0.2.80"))
	for range 2 {
		v.Verify(context.Background(), verifyAgent("google-common"), netip.MustParseAddr("192.0.2.80"))
	}
	if n := f.Count(dns.TypePTR, reverseName(t, "192.0.2.80")); n != 3*one {
		t.Errorf("PTR queries = %d, want %d (failures not cached)", n, 3*one)
	}
}

func TestVerifyCacheBounded(t *testing.T) {
	f := newFakeDNS(t) // every PTR is NXDOMAIN: every result is a cached Spoofed
	v := newTestVerifier(t, f, VerifierConfig{CacheSize: 10})
	for i := range 40 {
		ip := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		if got := v.Verify(context.Background(), verifyAgent("google-common"), ip); got != Spoofed {
			t.Fatalf("%s: %v", ip, got)
		}
		if n := v.neg.len(); n > 10 {
			t.Fatalf("negative cache holds %d entries, CacheSize 10", n)
		}
	}
	if n := v.neg.len(); n < 5 {
		t.Errorf("negative cache holds only %d entries", n)
	}

	// A large cache stays within its bound too.
	c := newResultCache(1000)
	for i := range 5000 {
		k := cacheKey{uint16(i % 3), netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})}
		c.put(k, Spoofed, 100)
		if _, ok := c.get(k, 0); !ok {
			t.Fatalf("entry %d missing right after put", i)
		}
	}
	if n := c.len(); n > 1000 || n < 900 {
		t.Errorf("cache of 1000 holds %d", n)
	}
	k := cacheKey{0, netip.MustParseAddr("192.0.2.1")}
	c.put(k, Verified, 200)
	if v, ok := c.get(k, 199); !ok || v != Verified {
		t.Errorf("entry lost: %v %v", v, ok)
	}
	if _, ok := c.get(k, 200); ok {
		t.Error("expired entry returned")
	}
	// Tiny caches work too.
	for size := 1; size <= 5; size++ {
		c := newResultCache(size)
		for i := range 20 {
			c.put(cacheKey{0, netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})}, Spoofed, 100)
		}
		if n := c.len(); n > size || n == 0 {
			t.Errorf("cache of %d holds %d", size, n)
		}
	}
}

func TestVerifyIPRangesWithoutDNS(t *testing.T) {
	f := newFakeDNS(t)
	v := newTestVerifier(t, f, VerifierConfig{})
	// Every prefix of Google's own file verifies, with no DNS query.
	prefixes, err := LoadRangesFile("data/ips/google/googlebot.json")
	if err != nil {
		t.Fatal(err)
	}
	v4, v6 := 0, 0
	for _, p := range prefixes {
		for _, ip := range []netip.Addr{p.Addr(), prefixLastAddr(p)} {
			if got := v.Verify(context.Background(), verifyAgent("google-common"), ip); got != Verified {
				t.Errorf("Googlebot address %s (from %s): %v", ip, p, got)
			}
		}
		if p.Addr().Is4() {
			v4++
		} else {
			v6++
		}
	}
	if v4 == 0 || v6 == 0 {
		t.Errorf("googlebot.json: %d IPv4 and %d IPv6 prefixes", v4, v6)
	}
	for _, tc := range []struct{ method, ip string }{
		{"bingbot", "13.66.139.1"},
		{"applebot", "17.22.237.1"},
		{"ahrefs", "5.39.1.224"},
		{"google-user-triggered", "34.64.6.1"},
		{"google-special", listFirstAddr(t, "data/ips/google/special-crawlers.json")},
		{"meta", "31.13.24.1"},
	} {
		if got := v.Verify(context.Background(), verifyAgent(tc.method), netip.MustParseAddr(tc.ip)); got != Verified {
			t.Errorf("%s %s: %v, want verified", tc.method, tc.ip, got)
		}
	}
	if n := f.Total(); n != 0 {
		t.Errorf("listed addresses caused %d DNS queries", n)
	}
}

func listFirstAddr(t *testing.T, file string) string {
	t.Helper()
	p, err := LoadRangesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return p[0].Addr().String()
}

// prefixLastAddr returns the highest address of p.
func prefixLastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestVerifyListFreshness(t *testing.T) {
	in := netip.MustParseAddr(listFirstAddr(t, "data/ips/sefinek/gptbot.csv"))
	out := netip.MustParseAddr("192.0.2.90")
	out6 := netip.MustParseAddr("2001:db8::90")
	clock := newVerifyClock("2026-05-10T00:00:00Z") // six days after the snapshot of gptbot.csv
	v := newTestVerifier(t, nil, VerifierConfig{Now: clock.Now})
	ctx := context.Background()
	gpt := verifyAgent("openai-gptbot")
	expect := func(what string, ip netip.Addr, want Verdict) {
		t.Helper()
		if got := v.Verify(ctx, gpt, ip); got != want {
			t.Errorf("%s: Verify(%s) = %v, want %v", what, ip, got, want)
		}
	}
	expect("fresh list, listed", in, Verified)
	expect("fresh list, unlisted", out, Spoofed)
	expect("IPv4-only list, IPv6 client", out6, Unverified)

	clock.Advance(30 * 24 * time.Hour)
	expect("stale list, listed", in, Verified)
	expect("stale list, unlisted", out, Unverified)

	// A list given at run time is fresh as of NewVerifier.
	clock = newVerifyClock("2026-11-22T08:00:00Z")
	v = newTestVerifier(t, nil, VerifierConfig{
		Now:    clock.Now,
		Ranges: map[string][]netip.Prefix{"openai-gptbot": {netip.MustParsePrefix("203.0.113.0/24")}},
	})
	expect("run-time list, listed", netip.MustParseAddr("203.0.113.9"), Verified)
	expect("run-time list replaces the snapshot", in, Spoofed)
	expect("run-time list, unlisted", out, Spoofed)
	clock.Advance(31 * 24 * time.Hour)
	expect("run-time list gone stale", out, Unverified)
	if err := v.SetRanges("openai-gptbot", []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	expect("refreshed with SetRanges", out, Spoofed)
	if err := v.SetRanges("openai-gptbot", []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, clock.Now().AddDate(0, -2, 0)); err != nil {
		t.Fatal(err)
	}
	expect("SetRanges with an old date", out, Unverified)

	// Lists never prove a negative when MaxListAge is negative.
	v = newTestVerifier(t, nil, VerifierConfig{Now: newVerifyClock("2026-05-05T00:00:00Z").Now, MaxListAge: -1})
	expect("MaxListAge < 0", out, Unverified)

	// Meta's list is derived from its AS: positive evidence only.
	v = newTestVerifier(t, nil, VerifierConfig{Now: newVerifyClock("2026-05-02T00:00:00Z").Now})
	if got := v.Verify(ctx, verifyAgent("meta"), out); got != Unverified {
		t.Errorf("meta, fresh ASN list, unlisted: %v, want unverified", got)
	}
	v = newTestVerifier(t, nil, VerifierConfig{
		Ranges: map[string][]netip.Prefix{"meta": {netip.MustParsePrefix("203.0.113.0/24")}},
	})
	if got := v.Verify(ctx, verifyAgent("meta"), out); got != Unverified {
		t.Errorf("meta, run-time list, unlisted: %v, want unverified", got)
	}
}

func TestVerifyYandexIgnoresNetworkList(t *testing.T) {
	// yandexbot.csv is Yandex's whole network, not its crawlers: an address
	// in it is still checked by reverse DNS.
	f := newFakeDNS(t)
	ip := "5.45.192.1" // in yandexbot.csv
	f.PTR(ip, "not-a-robot.example")
	v := newTestVerifier(t, f, VerifierConfig{})
	if got := v.Verify(context.Background(), verifyAgent("yandex"), netip.MustParseAddr(ip)); got != Spoofed {
		t.Errorf("yandex: %v, want spoofed", got)
	}
	f.PTR("192.0.2.95", "spider-192-0-2-95.yandex.com")
	f.Host("spider-192-0-2-95.yandex.com", "192.0.2.95")
	if got := v.Verify(context.Background(), verifyAgent("yandex"), netip.MustParseAddr("192.0.2.95")); got != Verified {
		t.Errorf("yandex rDNS: %v, want verified", got)
	}
}

func TestNewVerifierErrors(t *testing.T) {
	for name, cfg := range map[string]VerifierConfig{
		"unknown key": {Ranges: map[string][]netip.Prefix{"gptbot": {netip.MustParsePrefix("192.0.2.0/24")}}},
		"empty list":  {Ranges: map[string][]netip.Prefix{"openai-gptbot": {}}},
		"negative":    {Timeout: -1},
	} {
		if _, err := NewVerifier(cfg); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "agents: ") {
			t.Errorf("%s: error without context: %v", name, err)
		}
	}
}

// The method keys are fixed: the catalogue's Profile.Verify values.
var verifyMethodKeys = []string{
	"google-common", "google-special", "google-user-triggered", "bingbot", "applebot",
	"yahoo-slurp", "yandex", "baidu", "amazonbot", "petalbot", "duckduckgo",
	"openai-gptbot", "openai-searchbot", "openai-chatgpt-user", "perplexitybot",
	"perplexity-user", "anthropic", "ccbot", "ahrefs", "meta", "pinterest",
}

func TestEmbeddedSnapshot(t *testing.T) {
	ms := VerificationMethods()
	byKey := map[string]VerificationMethod{}
	for _, m := range ms {
		byKey[m.Key] = m
		if len(m.Sources) == 0 || m.Evidence == "" || m.Name == "" {
			t.Errorf("%s: missing name, sources or evidence", m.Key)
		}
		if len(m.RDNSSuffixes) == 0 && m.Prefixes == 0 {
			t.Errorf("%s: no way to verify", m.Key)
		}
		t.Logf("%-22s lists %-58v date %s ranges %5d suffixes %v spoofIfUnlisted %v",
			m.Key, m.Lists, m.ListDate.Format("2006-01-02"), m.Prefixes, m.RDNSSuffixes, m.SpoofIfUnlisted)
	}
	if len(ms) != len(verifyMethodKeys) {
		t.Errorf("%d methods, want %d", len(ms), len(verifyMethodKeys))
	}
	for _, k := range verifyMethodKeys {
		if _, ok := byKey[k]; !ok {
			t.Errorf("method %q missing", k)
		}
	}
	for _, k := range []string{"openai-gptbot", "openai-searchbot", "openai-chatgpt-user", "perplexitybot", "perplexity-user", "anthropic", "duckduckgo"} {
		if !byKey[k].SpoofIfUnlisted {
			t.Errorf("%s: list should be conclusive", k)
		}
	}
	if byKey["meta"].SpoofIfUnlisted {
		t.Error("meta: ASN-derived list must not prove spoofing")
	}

	// Google's files carry their own creationTime: it must match the date
	// recorded in verification.json.
	var vd verificationData
	if err := json.Unmarshal(verificationJSON, &vd); err != nil {
		t.Fatal(err)
	}
	for name, ls := range vd.Lists {
		if _, err := os.Stat("data/ips/" + name); err != nil {
			t.Errorf("list %s: %v", name, err)
		}
		if _, err := os.Stat("data/ips/" + ls.Licence); err != nil {
			t.Errorf("list %s licence: %v", name, err)
		}
		if !strings.HasPrefix(name, "google/") {
			continue
		}
		data, err := os.ReadFile("data/ips/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			CreationTime string `json:"creationTime"`
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(g.CreationTime, ls.Date) {
			t.Errorf("%s: creationTime %s, verification.json says %s", name, g.CreationTime, ls.Date)
		}
	}
	if _, err := parseVerifySnapshot([]byte(`{"methods":{"x":{"ip_lists":["nope.csv"]}}}`), ipsFS); err == nil {
		t.Error("undescribed list accepted")
	}
	if _, err := parseVerifySnapshot([]byte(`{"methods":{"x":{}}}`), ipsFS); err == nil {
		t.Error("method without a way to verify accepted")
	}
}

func BenchmarkVerifyCached(b *testing.B) {
	f := newFakeDNS(b)
	f.PTR("192.0.2.10", "crawl-192-0-2-10.googlebot.com")
	f.Host("crawl-192-0-2-10.googlebot.com", "192.0.2.10")
	v, err := NewVerifier(VerifierConfig{Resolver: f.Resolver()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, ip string
		want     Verdict
	}{
		{"rdns-verified", "192.0.2.10", Verified},
		{"rdns-spoofed", "192.0.2.11", Spoofed},
		{"list", "66.249.66.1", Verified},
	} {
		a, ip := verifyAgent("google-common"), netip.MustParseAddr(tc.ip)
		if got := v.Verify(ctx, a, ip); got != tc.want {
			b.Fatalf("%s: %v", tc.ip, got)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.Verify(ctx, a, ip)
			}
		})
	}
	b.Run("rdns-verified-parallel", func(b *testing.B) {
		a, ip := verifyAgent("google-common"), netip.MustParseAddr("192.0.2.10")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v.Verify(ctx, a, ip)
			}
		})
	})
}

// Every verification method the catalogue names exists, so that no crawler
// silently goes unverified; and every method is used by some crawler.
func TestVerifyCatalogueKeys(t *testing.T) {
	known := map[string]bool{}
	for _, m := range VerificationMethods() {
		known[m.Key] = true
	}
	used := map[string]bool{}
	for _, a := range Catalogue() {
		if k := a.Profile.Verify; k != "" {
			used[k] = true
			if !known[k] {
				t.Errorf("%s: unknown verification method %q", a.Name, k)
			}
		}
	}
	for k := range known {
		if !used[k] {
			t.Errorf("verification method %q is used by no catalogue entry", k)
		}
	}
}
