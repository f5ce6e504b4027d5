package caddyrobots

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// Limits of the host table.
const (
	// maxHosts is the most sites (server and Host) whose robots.txt is
	// kept for source site. Parsed versions are shared by content, so a
	// flood of random Host names on a catch-all site costs a small entry
	// per name, not a parsed copy each.
	maxHosts = 4096
	// activeFor is how long after its last request a host counts as in
	// active use: such a host is never evicted.
	activeFor = time.Minute
	// DefaultMaxRuleMemory bounds the estimated memory of the distinct
	// parsed robots.txt versions a handler's table keeps.
	DefaultMaxRuleMemory = 64 << 20
	// parsedFactor and parsedBase estimate a parsed version's memory from
	// its body: measured at 2x to 20x the body (many small groups cost
	// most), so the estimate takes the high end.
	parsedFactor = 24
	parsedBase   = 4 << 10
)

// siteKey names the rules of one site: the listen addresses of the server
// that serves it and the Host name its clients use (lower-cased, without
// port; a trailing dot kept, because a catch-all site may be the one that
// answers "example.com."). Rules loaded through one server never govern
// another, and a host is only loaded through the server that serves it.
type siteKey struct {
	server string
	host   string
}

// hostRules holds the robots.txt versions of one site.
type hostRules struct {
	key     siteKey
	snap    atomic.Pointer[snapshot]
	mu      sync.Mutex // serialises loads and swaps
	loading chan struct{}
	next    time.Time // when the next refresh is due
	// hostHeader and https are how clients reach the site: the loader's
	// virtual request uses the same Host header and scheme, so an app that
	// redirects to its canonical URL does not send it round in a loop.
	hostHeader string
	https      bool
	// prompted is when a client's copy of /robots.txt last differed from
	// ours, which makes the loader look again (at most every promptEvery).
	prompted time.Time
	// used is the coarse clock (seconds) of the last request for this
	// site; LRU eviction skips sites used within activeFor.
	used atomic.Int64
	// lastFetch, lastResult and lastErr describe the last load (under mu):
	// result is ok, client_error, server_error or error.
	lastFetch  time.Time
	lastResult string
	lastErr    string
	// saveMu serialises writes of the site's history to storage.
	saveMu sync.Mutex
	// restored is set once the site's version history was read from
	// storage.
	restored bool
	// born is the coarse clock when the site entered the table; stored
	// (under mu) is set once it has a history in storage, read or
	// written; dirty marks a history held back because the site is new
	// (see persistOrDefer).
	born   int64
	stored bool
	dirty  atomic.Bool
	// loadedBy is the config generation (ruleSource.gen) of the newest
	// config whose handler loaded the site: a site that only an older
	// config loaded is loaded again before a crawler's first decision
	// under the new one (see rulesFor).
	loadedBy atomic.Uint64
}

// hostTable holds the robots.txt versions of each site, and when each
// crawler last fetched /robots.txt. It lives in versionPool, keyed by the
// source, so a config reload keeps the version history that the grace rule
// depends on.
type hostTable struct {
	mu    sync.Mutex
	hosts map[siteKey]*hostRules
	view  atomic.Pointer[map[siteKey]*hostRules] // copy of hosts for lock-free reads
	// fetched is when each crawler last fetched /robots.txt.
	fetched *boundedMap[state.Identity, time.Time]
	// hot is a direct-mapped cache in front of view: a request's site is
	// found with one hash and one pointer, not a map walk (which costs
	// hundreds of ns in a busy server, where the map is out of the CPU
	// caches). Written only under mu, and cleared of evicted sites.
	hot  [hotSlots]atomic.Pointer[hostRules]
	seed maphash.Seed

	// content shares parsed versions by content hash across all sites of
	// the table, with a reference count per site version holding it.
	contentMu sync.Mutex
	content   map[string]*parsedVersion
	ruleBytes int64 // estimated memory of the distinct parsed versions
	// hasPrefs is set once any version of the table states AI usage
	// preferences; until then requests skip them at the cost of one load.
	hasPrefs atomic.Bool
}

// parsedVersion is one parsed robots.txt body, shared by every site and
// version with the same content.
type parsedVersion struct {
	robots *enforce.Robots
	body   []byte
	size   int64
	refs   int
}

const hotSlots = 64

// coarseNow is a clock in seconds, advanced by the refresh loops, so that
// marking a site as used costs no clock read.
var coarseNow atomic.Int64

func init() { coarseNow.Store(time.Now().Unix()) }

func newHostTable() *hostTable {
	initMetrics()
	return &hostTable{
		hosts:   map[siteKey]*hostRules{},
		fetched: newBoundedMap[state.Identity, time.Time](65536),
		seed:    maphash.MakeSeed(),
		content: map[string]*parsedVersion{},
	}
}

func (t *hostTable) hotSlot(k siteKey) *atomic.Pointer[hostRules] {
	// The host alone picks the slot (a handler's sites share one server);
	// lookup compares the whole key.
	return &t.hot[maphash.String(t.seed, k.host)%hotSlots]
}

// Destruct implements caddy.Destructor; nothing to release.
func (*hostTable) Destruct() error { return nil }

// lookup returns the rules of a site, or nil, without locking.
func (t *hostTable) lookup(k siteKey) *hostRules {
	if hr := t.hotSlot(k).Load(); hr != nil && hr.key == k {
		return hr
	}
	if v := t.view.Load(); v != nil {
		if hr, ok := (*v)[k]; ok {
			return hr
		}
	}
	return nil
}

// getOrAdd returns the rules of a site, adding an empty (pending) entry if
// needed. When the table is full it evicts the least recently used site
// that is not in active use; when every site is in use it returns nil and
// the caller treats the site as unavailable for now.
func (t *hostTable) getOrAdd(k siteKey) (hr *hostRules, added bool) {
	if hr := t.lookup(k); hr != nil {
		return hr, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if hr, ok := t.hosts[k]; ok {
		t.hotSlot(k).Store(hr)
		return hr, false
	}
	// Evict a batch at a time, so a flood of new names does not scan the
	// table for every one.
	if len(t.hosts) >= maxHosts && !t.evictLocked(maxHosts/64) {
		return nil, false
	}
	hr = &hostRules{key: k}
	hr.snap.Store(&snapshot{pending: true})
	hr.born = coarseNow.Load()
	hr.used.Store(hr.born)
	t.hosts[k] = hr
	t.publishView()
	t.hotSlot(k).Store(hr)
	return hr, true
}

// evictLocked removes up to n least recently used sites that are not in
// active use; it reports whether it removed any. Called with mu held.
func (t *hostTable) evictLocked(n int) bool {
	cutoff := coarseNow.Load() - int64(activeFor/time.Second)
	var idle []*hostRules
	for _, hr := range t.hosts {
		if hr.key.host != "" && hr.used.Load() <= cutoff { // "" is file and inline
			idle = append(idle, hr)
		}
	}
	if len(idle) == 0 {
		return false
	}
	slices.SortFunc(idle, func(a, b *hostRules) int { return cmp.Compare(a.used.Load(), b.used.Load()) })
	for _, victim := range idle[:min(n, len(idle))] {
		delete(t.hosts, victim.key)
		t.hotSlot(victim.key).CompareAndSwap(victim, nil)
		t.releaseVersions(victim.snap.Load().versions)
	}
	t.publishView()
	return true
}

// publishView copies hosts for lock-free readers; called with mu held,
// only when a site is added or evicted.
func (t *hostTable) publishView() {
	v := make(map[siteKey]*hostRules, len(t.hosts))
	for k, hr := range t.hosts {
		v[k] = hr
	}
	t.view.Store(&v)
}

// parsed returns the shared parsed form of body (whose content id is id),
// parsing it only if no site holds it yet, and takes a reference. It
// returns nil when keeping a new parsed version would exceed limit: the
// caller keeps what it has.
func (t *hostTable) parsed(id string, body []byte, limit int64) *parsedVersion {
	t.contentMu.Lock()
	if pv, ok := t.content[id]; ok {
		pv.refs++
		t.contentMu.Unlock()
		return pv
	}
	size := int64(len(body))*parsedFactor + parsedBase
	if limit > 0 && t.ruleBytes+size > limit {
		t.contentMu.Unlock()
		return nil
	}
	t.contentMu.Unlock()
	// Parse outside the lock: a 500 KiB file takes tens of milliseconds.
	robots := enforce.Parse(body)
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	if pv, ok := t.content[id]; ok { // parsed meanwhile by another site
		pv.refs++
		return pv
	}
	if limit > 0 && t.ruleBytes+size > limit {
		return nil
	}
	pv := &parsedVersion{robots: robots, body: append([]byte(nil), body...), size: size, refs: 1}
	if robots.HasPreferences() {
		t.hasPrefs.Store(true)
	}
	t.content[id] = pv
	t.ruleBytes += size
	metrics.ruleMemory.Set(float64(t.ruleBytes))
	return pv
}

// releaseVersions drops a reference on the parsed versions of vs, freeing
// those no site holds any more.
func (t *hostTable) releaseVersions(vs []*version) {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	for _, v := range vs {
		pv, ok := t.content[v.ID]
		if !ok {
			continue
		}
		if pv.refs--; pv.refs <= 0 {
			delete(t.content, v.ID)
			t.ruleBytes -= pv.size
		}
	}
	metrics.ruleMemory.Set(float64(t.ruleBytes))
}

// makeRoom evicts inactive sites until a version of the given body size
// would fit under limit; it reports whether it fits.
func (t *hostTable) makeRoom(bodyLen int, limit int64) bool {
	size := int64(bodyLen)*parsedFactor + parsedBase
	for {
		t.contentMu.Lock()
		fits := limit <= 0 || t.ruleBytes+size <= limit
		t.contentMu.Unlock()
		if fits {
			return true
		}
		t.mu.Lock()
		ok := t.evictLocked(1)
		t.mu.Unlock()
		if !ok {
			return false
		}
	}
}
