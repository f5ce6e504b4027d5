package agents

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Verification data: data/verification.json maps each method key (the
// value of Profile.Verify) to reverse-DNS suffixes and IP lists; data/ips
// holds a dated snapshot of the lists, with the licences of the mirrors
// they were copied from.
var (
	//go:embed data/verification.json
	verificationJSON []byte
	//go:embed data/ips
	ipsFS embed.FS
)

// Defaults of VerifierConfig, used for its zero fields.
const (
	DefaultVerifyTimeout = 2 * time.Second     // VerifierConfig.Timeout
	DefaultCacheSize     = 16384               // VerifierConfig.CacheSize, per cache
	DefaultPositiveTTL   = 6 * time.Hour       // VerifierConfig.PositiveTTL
	DefaultNegativeTTL   = time.Hour           // VerifierConfig.NegativeTTL
	DefaultErrorTTL      = 10 * time.Second    // VerifierConfig.ErrorTTL
	DefaultMaxListAge    = 30 * 24 * time.Hour // VerifierConfig.MaxListAge
	DefaultMaxLookups    = 256                 // VerifierConfig.MaxLookups
)

// ResolverAt returns a resolver that sends every DNS query to addr
// (host:port), for VerifierConfig.Resolver: the verify block's resolver
// option and caddy robots check --resolver.
func ResolverAt(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

// VerifierConfig configures a Verifier. The zero value is usable: every
// zero field takes its default.
type VerifierConfig struct {
	// Resolver does the reverse and forward DNS lookups; nil means
	// net.DefaultResolver.
	Resolver *net.Resolver

	// Timeout bounds all DNS lookups of one verification (the PTR query and
	// the forward queries of its names). Default 2 s. A verification that
	// runs out of time is Unverified, never Spoofed.
	Timeout time.Duration

	// CacheSize bounds each of the two result caches (verified addresses;
	// spoofed and failed ones), in entries. Default 16384.
	CacheSize int

	// PositiveTTL is how long a Verified result of reverse DNS is reused.
	// Default 6 h.
	PositiveTTL time.Duration
	// NegativeTTL is how long a Spoofed result of reverse DNS is reused.
	// Default 1 h.
	NegativeTTL time.Duration
	// ErrorTTL is how long an Unverified result caused by a DNS failure
	// (timeout, SERVFAIL, refused, network error) is reused, so that a
	// broken resolver is not asked again on every request. Default 10 s;
	// negative disables caching of failures.
	ErrorTTL time.Duration

	// Ranges gives IP prefixes per method key (see VerificationMethods),
	// typically freshly downloaded from the operator. For each key present
	// it replaces the embedded snapshot; it counts as published at the time
	// NewVerifier is called (Now()), which is what matters for MaxListAge.
	// Use SetRanges to replace a list later with its own date. An unknown
	// key or an empty list is an error.
	Ranges map[string][]netip.Prefix
	// RangesAsOf dates the lists of Ranges, by method key: a list read
	// from a file is as old as the file (LoadRangesFileAsOf), not as new
	// as the start. A key without a date counts as published at Now().
	RangesAsOf map[string]time.Time

	// MaxListAge is how old an IP list may be and still prove a negative.
	// For methods that can only be checked against a published list
	// (OpenAI, Perplexity, Anthropic, DuckDuckGo), an address outside the
	// list is Spoofed only while the list is at most MaxListAge old;
	// beyond that it is Unverified, because operators add addresses often
	// and a stale list must not turn a real crawler into a spoof. Default
	// 30 days; negative means lists never prove a negative.
	MaxListAge time.Duration

	// MaxLookups bounds the reverse DNS verifications in flight at once;
	// beyond it a verification that would need DNS is Unverified at once
	// (not cached). It keeps a flood of claimed crawlers from many
	// addresses from swamping the resolver. Default 256.
	MaxLookups int

	// Now is the clock, for tests; nil means time.Now.
	Now func() time.Time
}

// Verifier checks that a client claiming a well-known crawler really is
// that crawler, by the method its operator documents: the address is in
// the operator's published IP ranges, or it passes forward-confirmed
// reverse DNS under the operator's domains.
//
// Verify never returns Spoofed on a failure of its own. The verdicts are:
//
//   - no method (Profile.Verify empty or unknown), invalid address, or an
//     address that is not public (loopback, private, link-local,
//     multicast: most likely a proxy's, not the client's): Unverified,
//     without DNS;
//   - address in the method's IP ranges: Verified, without DNS;
//   - methods with reverse-DNS suffixes (Google, Bing, Apple, Yahoo,
//     Yandex, Baidu, Amazon, Petal, Common Crawl, Ahrefs, Pinterest):
//     a PTR name under a suffix that resolves back to the address:
//     Verified; NXDOMAIN or no PTR, PTR names all outside the suffixes,
//     or forward lookups that never return the address: Spoofed; timeout,
//     SERVFAIL, refused, network error, too many lookups in flight, or the
//     caller's context ending first: Unverified;
//   - methods with IP lists only (OpenAI, Perplexity, Anthropic,
//     DuckDuckGo): outside the list: Spoofed if the list is at most
//     MaxListAge old and holds addresses of the same family (an IPv4-only
//     list says nothing about an IPv6 client), else Unverified;
//   - meta: the list is derived from Meta's AS32934 routes, not published
//     by Meta as a crawler list, so it only ever proves Verified; outside
//     it: Unverified.
//
// Yandex publishes only its whole network (yandex.com/ips), not its
// crawlers' addresses, so yandex is verified by reverse DNS alone; the
// network list is kept in the data for reference but never consulted.
//
// The embedded lists are a dated snapshot (see VerificationMethods): they
// keep proving Verified, but once older than MaxListAge they no longer
// prove Spoofed. To get Spoofed verdicts for the list-only methods, give
// current lists through VerifierConfig.Ranges or SetRanges; a RangesFetcher
// downloads them from the operators and does that. StaleLists names the
// methods whose list is too old to prove a spoof.
//
// Results of reverse DNS are cached per method and address (PositiveTTL,
// NegativeTTL, ErrorTTL); concurrent verifications of one address share
// one lookup. A Verifier is safe for concurrent use.
type Verifier struct {
	resolver      *net.Resolver
	timeout       time.Duration
	posTTL        time.Duration
	negTTL        time.Duration
	errTTL        time.Duration
	maxListAge    time.Duration
	now           func() time.Time // wall clock, for list freshness
	injectedClock bool             // now was injected: use it for cache expiry too
	base          time.Time        // origin of clock() when injectedClock

	methods verifyMethodTable
	pos     *resultCache // Verified results
	neg     *resultCache // Spoofed results and, briefly, failures

	inflight singleflight.Group // reverse DNS lookups in flight, by method and address
	slots    chan struct{}      // one token per lookup in flight
}

// verifyMethod is one verification method of a Verifier.
type verifyMethod struct {
	key             string
	idx             uint16
	suffixes        []string // lower case, no trailing dot
	spoofIfUnlisted bool
	ranges          atomic.Pointer[rangeList]
}

// rangeList is a method's IP list and the date it was published.
type rangeList struct {
	set  *PrefixSet
	asOf time.Time
}

// NewVerifier returns a Verifier using the embedded verification data and
// IP snapshot, with cfg.Ranges replacing snapshot lists.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	snap, err := loadVerifySnapshot()
	if err != nil {
		return nil, err
	}
	v := &Verifier{
		resolver:      cfg.Resolver,
		timeout:       verifyDurationOr(cfg.Timeout, DefaultVerifyTimeout),
		posTTL:        verifyDurationOr(cfg.PositiveTTL, DefaultPositiveTTL),
		negTTL:        verifyDurationOr(cfg.NegativeTTL, DefaultNegativeTTL),
		errTTL:        verifyDurationOr(cfg.ErrorTTL, DefaultErrorTTL),
		maxListAge:    verifyDurationOr(cfg.MaxListAge, DefaultMaxListAge),
		now:           cfg.Now,
		injectedClock: cfg.Now != nil,
	}
	if v.resolver == nil {
		v.resolver = net.DefaultResolver
	}
	if v.now == nil {
		v.now = time.Now
		startVerifyClock()
	}
	v.base = v.now()
	if cfg.Timeout < 0 || cfg.PositiveTTL < 0 || cfg.NegativeTTL < 0 || cfg.CacheSize < 0 || cfg.MaxLookups < 0 {
		return nil, fmt.Errorf("agents: verifier config: negative Timeout, PositiveTTL, NegativeTTL, CacheSize or MaxLookups")
	}
	size := cfg.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	v.pos, v.neg = newResultCache(size), newResultCache(size)
	lookups := cfg.MaxLookups
	if lookups == 0 {
		lookups = DefaultMaxLookups
	}
	v.slots = make(chan struct{}, lookups)

	ms := make([]*verifyMethod, 0, len(snap))
	for _, sm := range snap {
		m := &verifyMethod{key: sm.key, idx: sm.idx, suffixes: sm.suffixes, spoofIfUnlisted: sm.spoofIfUnlisted}
		m.ranges.Store(&rangeList{set: sm.set, asOf: sm.asOf})
		ms = append(ms, m)
	}
	v.methods = newVerifyMethodTable(ms)
	for key, prefixes := range cfg.Ranges {
		asOf := v.base
		if t, ok := cfg.RangesAsOf[key]; ok && !t.IsZero() {
			asOf = t
		}
		if err := v.SetRanges(key, prefixes, asOf); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// clock returns the time for cache expiry, in nanoseconds: the coarse
// monotonic clock, or the injected clock since the Verifier was made.
func (v *Verifier) clock() int64 {
	if v.injectedClock {
		return int64(v.now().Sub(v.base))
	}
	return verifyClockNanos.Load()
}

// The coarse clock: nanoseconds since verifyClockStart on the monotonic clock,
// advanced every verifyClockTick by one goroutine for the whole process, started
// with the first Verifier that does not use an injected clock. Cache
// lookups read it with one atomic load instead of reading the system clock;
// its resolution is ample for TTLs of seconds to hours.
var (
	verifyClockStart = time.Now()
	verifyClockNanos atomic.Int64
	verifyClockOnce  sync.Once
)

const verifyClockTick = 250 * time.Millisecond

func startVerifyClock() {
	verifyClockOnce.Do(func() {
		verifyClockNanos.Store(int64(time.Since(verifyClockStart)))
		go func() {
			t := time.NewTicker(verifyClockTick)
			for range t.C {
				verifyClockNanos.Store(int64(time.Since(verifyClockStart)))
			}
		}()
	})
}

// verifyMethodTable finds a method by key in O(1) without hashing the whole
// key: an open-addressing table at most half full.
type verifyMethodTable struct {
	slots []*verifyMethod
	mask  uint
}

func newVerifyMethodTable(ms []*verifyMethod) verifyMethodTable {
	n := 8
	for n < 2*len(ms) {
		n *= 2
	}
	t := verifyMethodTable{slots: make([]*verifyMethod, n), mask: uint(n - 1)}
	for _, m := range ms {
		for i := verifyMethodHash(m.key); ; i++ {
			if t.slots[i&t.mask] == nil {
				t.slots[i&t.mask] = m
				break
			}
		}
	}
	return t
}

// verifyMethodHash mixes the length and three bytes of a non-empty key.
func verifyMethodHash(key string) uint {
	n := len(key)
	h := uint(n)*0x9e3779b1 ^ uint(key[0]) ^ uint(key[n/2])<<8 ^ uint(key[n-1])<<16
	h *= 0x85ebca6b
	return h ^ h>>15
}

func (t *verifyMethodTable) get(key string) *verifyMethod {
	if key == "" {
		return nil
	}
	for i := verifyMethodHash(key); ; i++ {
		m := t.slots[i&t.mask]
		if m == nil || m.key == key {
			return m
		}
	}
}

func verifyDurationOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// SetRanges replaces the IP list of the method key (see
// VerificationMethods) with prefixes published at asOf, for example after
// downloading the operator's current list; asOf decides freshness against
// MaxListAge. It is safe to call while verifications run. It fails for an
// unknown key or an empty list, leaving the current list in place.
func (v *Verifier) SetRanges(key string, prefixes []netip.Prefix, asOf time.Time) error {
	m := v.methods.get(key)
	if m == nil {
		return fmt.Errorf("agents: IP ranges for unknown verification method %q", key)
	}
	set := NewPrefixSet(prefixes)
	if set.Len() == 0 {
		return fmt.Errorf("agents: IP ranges for verification method %q: %w", key, ErrNoPrefixes)
	}
	m.ranges.Store(&rangeList{set: set, asOf: asOf})
	return nil
}

// ListAsOf returns the date of the IP list the method key uses now (the
// embedded snapshot's, or the one last given to SetRanges) and whether the
// method has a list at all.
func (v *Verifier) ListAsOf(key string) (time.Time, bool) {
	m := v.methods.get(key)
	if m == nil {
		return time.Time{}, false
	}
	rl := m.ranges.Load()
	if rl.set.Len() == 0 {
		return time.Time{}, false
	}
	return rl.asOf, true
}

// StaleLists returns, sorted, the methods whose IP list would prove a spoof
// while fresh (the list-only methods: OpenAI, Perplexity, Anthropic,
// DuckDuckGo) but is older than MaxListAge now, so that a claim from an
// address outside it is Unverified instead of Spoofed. With the embedded
// snapshot alone these are all of them once the snapshot is a month old;
// SetRanges (see RangesFetcher) keeps them fresh.
func (v *Verifier) StaleLists() []string {
	var out []string
	for _, m := range v.methods.slots {
		if m == nil || !m.spoofIfUnlisted || len(m.suffixes) > 0 {
			continue
		}
		if rl := m.ranges.Load(); rl.set.Len() > 0 && !v.fresh(rl.asOf) {
			out = append(out, m.key)
		}
	}
	slices.Sort(out)
	return out
}

// Verify tells whether ip belongs to the crawler a claims to be, using the
// method a.Profile.Verify names; see Verifier for the verdicts. It may wait
// for DNS, at most the configured Timeout or until ctx ends, whichever
// comes first; a lookup cut short by ctx goes on in the background and its
// result is cached for the next request. A cached or list-based answer
// takes well under a microsecond.
func (v *Verifier) Verify(ctx context.Context, a Agent, ip netip.Addr) Verdict {
	return v.VerifyMethod(ctx, a.Profile.Verify, ip)
}

// VerifyMethod is Verify for a method key given directly (see
// VerificationMethods); an empty or unknown key gives Unverified.
func (v *Verifier) VerifyMethod(ctx context.Context, key string, ip netip.Addr) Verdict {
	m := v.methods.get(key)
	if m == nil || !ip.IsValid() {
		return Unverified
	}
	ip = ip.Unmap().WithZone("")
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		// Loopback, private, link-local, multicast: never a public
		// crawler's address, most likely a proxy's (a missing
		// trusted_proxies setting); judging it would blame the crawler.
		return Unverified
	}
	rl := m.ranges.Load()
	if rl.set.Contains(ip) {
		return Verified
	}
	if len(m.suffixes) == 0 {
		if m.spoofIfUnlisted && rl.set.hasFamily(ip) && v.fresh(rl.asOf) {
			return Spoofed
		}
		return Unverified
	}
	k := cacheKey{method: m.idx, ip: ip}
	now := v.clock()
	if vd, ok := v.pos.get(k, now); ok {
		return vd
	}
	if vd, ok := v.neg.get(k, now); ok {
		return vd
	}
	return v.lookup(ctx, m, k)
}

// fresh reports whether a list published at asOf may prove a negative.
func (v *Verifier) fresh(asOf time.Time) bool {
	return v.maxListAge > 0 && v.now().Sub(asOf) <= v.maxListAge
}

// lookup joins or starts the reverse DNS verification of k and waits for
// it or for ctx.
func (v *Verifier) lookup(ctx context.Context, m *verifyMethod, k cacheKey) Verdict {
	if ctx.Err() != nil {
		return Unverified
	}
	done := v.inflight.DoChan(m.key+" "+k.ip.String(), func() (any, error) {
		return v.run(m, k), nil
	})
	select {
	case r := <-done:
		return r.Val.(Verdict)
	case <-ctx.Done():
		return Unverified
	}
}

// run does one reverse DNS verification, detached from any caller's
// context so that a caller giving up does not fail the others, and caches
// the result. Beyond MaxLookups in flight it is Unverified at once, and
// that is not cached.
func (v *Verifier) run(m *verifyMethod, k cacheKey) Verdict {
	select {
	case v.slots <- struct{}{}:
		defer func() { <-v.slots }()
	default:
		return Unverified
	}
	ctx, cancel := context.WithTimeout(context.Background(), v.timeout)
	defer cancel()
	res := forwardConfirm(ctx, v.resolver, m.suffixes, k.ip)

	now := v.clock()
	switch res {
	case rdnsConfirmed:
		v.pos.put(k, Verified, now+int64(v.posTTL))
		return Verified
	case rdnsRejected:
		v.neg.put(k, Spoofed, now+int64(v.negTTL))
		return Spoofed
	default:
		if v.errTTL > 0 {
			v.neg.put(k, Unverified, now+int64(v.errTTL))
		}
		return Unverified
	}
}

// VerificationMethod describes one verification method of the embedded
// data, for documentation, admin pages and consistency checks.
type VerificationMethod struct {
	// Key is the value of Profile.Verify that selects the method.
	Key string
	// Name says whose crawlers the method verifies.
	Name string
	// Tokens are the User-Agent product tokens the method is meant for.
	Tokens []string
	// RDNSSuffixes are the domains a forward-confirmed PTR name must be
	// equal to or under; empty when the operator documents no such scheme.
	RDNSSuffixes []string
	// Lists are the embedded IP list files (paths under agents/data/ips).
	Lists []string
	// ListDate is the publication date of the oldest embedded list; zero
	// when there is none.
	ListDate time.Time
	// Prefixes is the number of distinct address ranges in the embedded
	// lists after merging.
	Prefixes int
	// SpoofIfUnlisted is true when an address outside a fresh list is
	// Spoofed (methods without reverse DNS whose list the operator
	// publishes as complete).
	SpoofIfUnlisted bool
	// Sources are the operator pages documenting the method.
	Sources []string
	// Evidence says how directly the facts were confirmed.
	Evidence string
	// Note records choices made for this method, if any.
	Note string
}

// VerificationMethods describes the methods of the embedded verification
// data, sorted by key. It panics only if the embedded data is corrupt,
// which the package's tests rule out.
func VerificationMethods() []VerificationMethod {
	snap, err := loadVerifySnapshot()
	if err != nil {
		panic(err)
	}
	out := make([]VerificationMethod, 0, len(snap))
	for _, sm := range snap {
		out = append(out, VerificationMethod{
			Key:             sm.key,
			Name:            sm.spec.Name,
			Tokens:          slices.Clone(sm.spec.UATokens),
			RDNSSuffixes:    slices.Clone(sm.suffixes),
			Lists:           slices.Clone(sm.spec.IPLists),
			ListDate:        sm.asOf,
			Prefixes:        sm.set.Len(),
			SpoofIfUnlisted: sm.spoofIfUnlisted,
			Sources:         slices.Clone(sm.spec.Sources),
			Evidence:        sm.spec.Evidence,
			Note:            sm.spec.Note,
		})
	}
	return out
}

// verificationData is the shape of data/verification.json.
type verificationData struct {
	Snapshot string                `json:"snapshot"`
	Lists    map[string]listSpec   `json:"lists"`
	Methods  map[string]methodSpec `json:"methods"`
}

type listSpec struct {
	Date    string `json:"date"` // 2006-01-02 or 2006-01-02T15:04:05 (UTC)
	URL     string `json:"url"`
	Via     string `json:"via"`
	Licence string `json:"licence"`
	Kind    string `json:"kind"` // operator, network, asn-derived
}

type methodSpec struct {
	Name            string   `json:"name"`
	UATokens        []string `json:"ua_tokens"`
	RDNSSuffixes    []string `json:"rdns_suffixes"`
	IPLists         []string `json:"ip_lists"`
	SpoofIfUnlisted bool     `json:"spoof_if_unlisted"`
	Sources         []string `json:"sources"`
	Evidence        string   `json:"evidence"`
	Note            string   `json:"note"`
}

// verifySnapMethod is a method of the embedded data, ready to use.
type verifySnapMethod struct {
	key             string
	idx             uint16
	spec            methodSpec
	suffixes        []string
	spoofIfUnlisted bool
	set             *PrefixSet
	asOf            time.Time
}

// loadVerifySnapshot parses the embedded data once; the PrefixSets are shared by
// every Verifier.
var loadVerifySnapshot = sync.OnceValues(func() ([]*verifySnapMethod, error) {
	return parseVerifySnapshot(verificationJSON, ipsFS)
})

// parseVerifySnapshot reads verification.json and the lists it names from fsys
// (rooted above data/ips).
func parseVerifySnapshot(data []byte, fsys fs.FS) ([]*verifySnapMethod, error) {
	var vd verificationData
	if err := json.Unmarshal(data, &vd); err != nil {
		return nil, fmt.Errorf("agents: embedded verification.json: %w", err)
	}
	keys := make([]string, 0, len(vd.Methods))
	for k := range vd.Methods {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sets := map[string][]netip.Prefix{}
	out := make([]*verifySnapMethod, 0, len(keys))
	for i, key := range keys {
		spec := vd.Methods[key]
		sm := &verifySnapMethod{key: key, idx: uint16(i), spec: spec, spoofIfUnlisted: spec.SpoofIfUnlisted}
		for _, s := range spec.RDNSSuffixes {
			sm.suffixes = append(sm.suffixes, strings.ToLower(strings.TrimSuffix(s, ".")))
		}
		if len(sm.suffixes) > 0 {
			sm.spoofIfUnlisted = false // reverse DNS decides negatives
		}
		var prefixes []netip.Prefix
		for _, name := range spec.IPLists {
			ls, ok := vd.Lists[name]
			if !ok {
				return nil, fmt.Errorf("agents: embedded verification.json: method %q names undescribed list %q", key, name)
			}
			date, err := parseListDate(ls.Date)
			if err != nil {
				return nil, fmt.Errorf("agents: embedded verification.json: list %q: %w", name, err)
			}
			if sm.asOf.IsZero() || date.Before(sm.asOf) {
				sm.asOf = date
			}
			if ls.Kind != "operator" {
				sm.spoofIfUnlisted = false // network and ASN lists only prove membership
			}
			p, ok := sets[name]
			if !ok {
				f, err := fsys.Open(path.Join("data/ips", name))
				if err != nil {
					return nil, fmt.Errorf("agents: embedded IP list: %w", err)
				}
				p, err = LoadRanges(f)
				f.Close()
				if err != nil {
					return nil, fmt.Errorf("agents: embedded IP list %s: %w", name, err)
				}
				sets[name] = p
			}
			prefixes = append(prefixes, p...)
		}
		if len(sm.suffixes) == 0 && len(prefixes) == 0 {
			return nil, fmt.Errorf("agents: embedded verification.json: method %q has neither reverse DNS suffixes nor IP lists", key)
		}
		sm.set = NewPrefixSet(prefixes)
		out = append(out, sm)
	}
	return out, nil
}

func parseListDate(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad date %q", s)
}
