// Package sites holds the robots.txt of each site a caddy-robots handler
// serves: the site table, the loader that fetches each site's robots.txt
// (through the server itself, from a file, or from inline text), the
// versions the grace rule needs, and their history in storage.
//
// A handler reads its sites through a [Loader]: [Loader.Snapshot] gives a
// request's site as an immutable [Snapshot] (one hash and one pointer for a
// known site, no lock, no allocation); [Loader.Status], [Reload] and
// [Withdraw] give the admin API plain values. A [Table] holds the sites of
// one source across config reloads; the caller keeps it (in Caddy, in a
// UsagePool) and gives it to each new Loader.
//
// The package imports nothing of Caddy: the server the loader sends its
// virtual GET /robots.txt through is an [http.Handler], and storage is a
// [certmagic.Storage].
package sites

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// Limits of the site table.
const (
	// maxSites is the most sites (server and Host) a table keeps for
	// source site. Parsed versions are shared by content, so a flood of
	// random Host names on a catch-all site costs a small entry per name,
	// not a parsed copy each.
	maxSites = 4096
	// maxProven is how many of them may be proven: loaded with a good
	// copy and still requested a minute after they were first seen
	// (established). The other maxSites - maxProven places, at least, are
	// for the sites not proven yet, where a new Host evicts the least
	// recently used of them; a proven site is never evicted for a new
	// Host. So a flood of unknown Hosts churns among the unproven sites,
	// and neither evicts nor starves a site the server has loaded and kept
	// serving.
	maxProven = maxSites * 3 / 4
	// keepProven is how long (seconds) a proven site keeps its place
	// after its last request: only a site idle for longer is demoted to
	// make room for another to be proven, or evicted to make room for
	// rules. A site that crawlers visit at least daily (RFC 9309 lets them
	// cache robots.txt for 24 hours) stays proven.
	keepProven = 24 * 60 * 60
	// promoteEvery is how often (seconds) an established site that could
	// not be proven (every place taken by a site in use) tries again.
	promoteEvery = 60
	// activeFor is how long after its last request a site counts as in
	// active use: such a site is never evicted to make room for rules.
	activeFor = time.Minute
	// parsedFactor and parsedBase estimate a parsed version's memory from
	// its body: measured at 2x to 20x the body (many small groups cost
	// most), so the estimate takes the high end.
	parsedFactor = 24
	parsedBase   = 4 << 10
	hotSlots     = 64
)

// key names the rules of one site: the listen addresses of the server that
// serves it and the host name its clients use (lower-cased, without port; a
// trailing dot kept, because a catch-all site may be the one that answers
// "example.com."). Rules loaded through one server never govern another,
// and a site is only loaded through the server that serves it. The one
// site of a file or inline source has the zero key.
type key struct {
	server string
	host   string
}

// site holds the robots.txt versions of one site. Nothing outside the
// package reads it: callers get a Snapshot or a Status.
type site struct {
	key     key
	snap    atomic.Pointer[Snapshot]
	mu      sync.Mutex // serialises loads and swaps; guards the fields below it
	loading chan struct{}
	next    time.Time // when the next refresh is due
	// https is set once a client reached the site over HTTPS: the
	// loader's virtual request asks the same way from then on, so an app
	// that redirects to its canonical https URL does not send it round in
	// a loop.
	https bool
	// prompted is when a client's copy of /robots.txt last differed from
	// ours, which makes the loader look again (at most every promptEvery).
	prompted time.Time
	// lastFetch, lastResult and lastErr describe the last load: result
	// is ok, client_error, server_error, redirect or error.
	lastFetch  time.Time
	lastResult string
	lastErr    string
	// finalURL is the URL the last load's answer came from after
	// redirects; "" when the site answered /robots.txt itself.
	finalURL string
	// unconfirmed is a change to no rules seen but not confirmed yet.
	unconfirmed *unconfirmed
	// outage is the run of failed loads the site is in; nil once a load
	// succeeds.
	outage *outage
	// warned is when each kind of suspicious-file warning was last given
	// for the site (see warnSuspicious).
	warned [warnKinds]time.Time
	// restored is set once the site's version history was read from
	// storage; stored once it has a history in storage, read or written.
	restored bool
	stored   bool
	// used is the coarse clock (seconds) of the last request for this
	// site; LRU eviction skips sites used within activeFor. born is the
	// coarse clock when the site entered the table.
	used atomic.Int64
	born int64
	// dirty marks a history held back because the site is new (see
	// persistOrDefer).
	dirty atomic.Bool
	// proven is set once the site is proven (see maxProven); tried is
	// the coarse clock of its last try to be. proven changes under the
	// table's mu.
	proven atomic.Bool
	tried  atomic.Int64
	// saveMu serialises writes of the site's history to storage, and
	// guards savedIDs: the version ids of the history in storage.
	saveMu   sync.Mutex
	savedIDs []string
	// loadedBy is the generation (Loader.gen) of the newest loader that
	// loaded the site: a site that only an older config loaded is loaded
	// again before a crawler's first decision under the new one.
	loadedBy atomic.Uint64
}

// setSavedIDs records the version ids of st's history in storage.
func (st *site) setSavedIDs(ids []string) {
	st.saveMu.Lock()
	defer st.saveMu.Unlock()
	st.savedIDs = ids
}

// locked runs f with st.mu held.
func (st *site) locked(f func()) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f()
}

// Table holds the sites of one source (every source site handler of the
// process shares one; a file or an inline text has its own) and the parsed
// versions they share by content. Keep it across config reloads, so that
// the version history the grace rule depends on survives them. It is safe
// for concurrent use.
type Table struct {
	name   string
	mu     sync.Mutex
	sites  map[key]*site
	proven int                           // sites with proven set; guarded by mu
	view   atomic.Pointer[map[key]*site] // copy of sites for lock-free reads
	// hot is a direct-mapped cache in front of view: a request's site is
	// found with one hash and one pointer, not a map walk (which costs
	// hundreds of ns in a busy server, where the map is out of the CPU
	// caches). Written only under mu, and cleared of evicted sites.
	hot  [hotSlots]atomic.Pointer[site]
	seed maphash.Seed

	// content shares parsed versions by content id across all sites of
	// the table, with a reference count per site version holding it.
	contentMu sync.Mutex
	content   map[string]*parsed
	ruleBytes int64 // estimated memory of the distinct parsed versions
	// hasPrefs is set once any version of the table states AI usage
	// preferences; until then requests skip them at the cost of one load.
	hasPrefs atomic.Bool
	// fold parses bodies case-folded (FoldCase).
	fold atomic.Bool
}

// FoldCase makes the table parse every body it loads case-folded
// (enforce.FoldCaseBytes), for handlers whose site's paths are
// case-insensitive; call it before the first load. The body kept, stored
// and served stays as the site wrote it.
func (t *Table) FoldCase() { t.fold.Store(true) }

// parse parses body as the table's rules.
func (t *Table) parse(body []byte) *enforce.Robots {
	if t.fold.Load() {
		return enforce.Parse(enforce.FoldCaseBytes(body))
	}
	return enforce.Parse(body)
}

// parsed is one robots.txt body and its parsed form, shared by every site
// and version with the same content.
type parsed struct {
	robots *enforce.Robots
	body   []byte
	fp     [32]byte // robots.RulesFingerprint()
	size   int64
	refs   int
	// warnings are what is wrong with the content (contentWarnings).
	warnings []string
}

// NewTable returns an empty table. name identifies the source in storage
// (a site's history is kept under a hash of name, server and host), so it
// must be the same for the same source across restarts: "site", or a name
// derived from the file path or the inline text.
func NewTable(name string) *Table {
	t := &Table{
		name:    name,
		sites:   map[key]*site{},
		seed:    maphash.MakeSeed(),
		content: map[string]*parsed{},
	}
	tables.Lock()
	defer tables.Unlock()
	tables.m[t] = struct{}{}
	return t
}

// tables are the tables in use in the process: the storage sweep keeps
// every body one of them holds.
var tables = struct {
	sync.Mutex
	m map[*Table]struct{}
}{m: map[*Table]struct{}{}}

// Destruct forgets the table (loaders stop with their context); it lets a
// Table live in a Caddy UsagePool, which calls it when the last config
// holding the table is unloaded.
func (t *Table) Destruct() error {
	tables.Lock()
	defer tables.Unlock()
	delete(tables.m, t)
	return nil
}

// heldAnywhere reports whether some table of the process holds the
// content id.
func heldAnywhere(id string) bool {
	tables.Lock()
	defer tables.Unlock()
	for t := range tables.m {
		if t.holds(id) {
			return true
		}
	}
	return false
}

// holds reports whether t holds the content id.
func (t *Table) holds(id string) bool {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	_, ok := t.content[id]
	return ok
}

// HasPreferences reports whether any version the table ever held states AI
// usage preferences (Content-Usage, Content-Signal). One atomic load: a
// request checks it before looking for preferences.
func (t *Table) HasPreferences() bool { return t.hasPrefs.Load() }

// RuleMemory returns the estimated memory of the distinct parsed versions
// the table keeps, in bytes.
func (t *Table) RuleMemory() int64 {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	return t.ruleBytes
}

// clock is a clock in seconds, advanced by the loaders' loops, so that
// marking a site as used costs no clock read.
var clock atomic.Int64

func init() { clock.Store(time.Now().Unix()) }

// Seconds returns the coarse clock the loaders advance once a second (Unix
// seconds): a time for bookkeeping that must cost nothing to read.
func Seconds() int64 { return clock.Load() }

func (t *Table) hotSlot(k key) *atomic.Pointer[site] {
	// The host alone picks the slot (a handler's sites share one server);
	// lookup compares the whole key.
	return &t.hot[maphash.String(t.seed, k.host)%hotSlots]
}

// lookup returns a site, or nil, without locking.
func (t *Table) lookup(k key) *site {
	if st := t.hotSlot(k).Load(); st != nil && st.key == k {
		return st
	}
	if v := t.view.Load(); v != nil {
		if st, ok := (*v)[k]; ok {
			return st
		}
	}
	return nil
}

// getOrAdd returns a site, adding an empty (pending) entry if needed. When
// the table is full it evicts the least recently used sites that are not
// proven, in use or not: a proven site is never evicted for a new one.
// There are always some (see maxProven); were there none, it would return
// nil and the caller treat the site as unavailable for now.
func (t *Table) getOrAdd(k key) (st *site, added bool) {
	if st := t.lookup(k); st != nil {
		return st, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.sites[k]; ok {
		t.hotSlot(k).Store(st)
		return st, false
	}
	// Evict a batch at a time, so a flood of new names does not scan the
	// table for every one.
	if len(t.sites) >= maxSites && !t.evictLocked(maxSites/64, false) {
		return nil, false
	}
	st = &site{key: k}
	st.snap.Store(pendingSnap)
	st.born = clock.Load()
	st.used.Store(st.born)
	t.sites[k] = st
	t.publishView()
	t.hotSlot(k).Store(st)
	return st, true
}

// all returns the table's sites; never hold t.mu while taking a site's
// lock.
func (t *Table) all() []*site {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*site, 0, len(t.sites))
	for _, st := range t.sites {
		out = append(out, st)
	}
	return out
}

// evictLocked removes up to n least recently used sites that are not
// proven; with idle set, only those not in active use, and then proven
// sites idle for longer than keepProven. It reports whether it removed
// any. Called with mu held.
func (t *Table) evictLocked(n int, idle bool) bool {
	now := clock.Load()
	cutoff := now - int64(activeFor/time.Second)
	if !idle {
		cutoff = now + 1
	}
	var victims, stale []*site
	for _, st := range t.sites {
		if st.key.host == "" { // file and inline
			continue
		}
		switch used := st.used.Load(); {
		case !st.proven.Load() && used <= cutoff:
			victims = append(victims, st)
		case idle && st.proven.Load() && used <= now-keepProven:
			stale = append(stale, st)
		}
	}
	byUse := func(a, b *site) int { return cmp.Compare(a.used.Load(), b.used.Load()) }
	slices.SortFunc(victims, byUse)
	slices.SortFunc(stale, byUse)
	victims = append(victims, stale...)
	if len(victims) == 0 {
		return false
	}
	for _, victim := range victims[:min(n, len(victims))] {
		if victim.proven.Load() {
			victim.proven.Store(false)
			t.proven--
		}
		delete(t.sites, victim.key)
		t.hotSlot(victim.key).CompareAndSwap(victim, nil)
		t.release(victim.snap.Load().versions)
	}
	t.publishView()
	return true
}

// prove makes st proven if it qualifies: a good copy loaded (snap has a
// version) and established (requested again at least establishAfter after
// it was first seen). When maxProven sites are proven, the least recently
// used of them idle for longer than keepProven gives its place up (it
// stays, unproven); if none does, st tries again after promoteEvery. A
// proven site, and a site that does not qualify, cost two atomic loads.
func (t *Table) prove(st *site, snap *Snapshot) {
	if st.proven.Load() || len(snap.versions) == 0 || !established(st) {
		return
	}
	now := clock.Load()
	if last := st.tried.Load(); last != 0 && now-last < promoteEvery {
		return
	}
	st.tried.Store(now)
	t.mu.Lock()
	defer t.mu.Unlock()
	if st.proven.Load() || t.sites[st.key] != st {
		return // proven meanwhile, or evicted
	}
	if t.proven >= maxProven {
		var oldest *site
		for _, o := range t.sites {
			if o.proven.Load() && o.used.Load() <= now-keepProven && (oldest == nil || o.used.Load() < oldest.used.Load()) {
				oldest = o
			}
		}
		if oldest == nil {
			return
		}
		oldest.proven.Store(false)
		t.proven--
	}
	st.proven.Store(true)
	t.proven++
}

// publishView copies sites for lock-free readers; called with mu held,
// only when a site is added or evicted.
func (t *Table) publishView() {
	v := make(map[key]*site, len(t.sites))
	for k, st := range t.sites {
		v[k] = st
	}
	t.view.Store(&v)
}

// acquire returns the shared parsed form of the content id, with a
// reference taken, or nil when no site holds it.
func (t *Table) acquire(id string) *parsed {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	p, ok := t.content[id]
	if !ok {
		return nil
	}
	p.refs++
	return p
}

// adopt keeps robots, parsed from body (whose content id is id), as a
// shared parsed version with one reference, unless another site added it
// meanwhile (then that one, with a reference taken). It returns nil when
// keeping it would take the table past limit (<= 0: no limit).
func (t *Table) adopt(id string, body []byte, robots *enforce.Robots, fp [32]byte, limit int64) *parsed {
	size := int64(len(body))*parsedFactor + parsedBase
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	if p, ok := t.content[id]; ok {
		p.refs++
		return p
	}
	if limit > 0 && t.ruleBytes+size > limit {
		return nil
	}
	p := &parsed{robots: robots, body: append([]byte(nil), body...), fp: fp, size: size, refs: 1, warnings: contentWarnings(body, robots)}
	if robots.HasPreferences() {
		t.hasPrefs.Store(true)
	}
	t.content[id] = p
	t.ruleBytes += size
	return p
}

// release drops a reference on the parsed versions of vs, freeing those no
// site holds any more.
func (t *Table) release(vs []*version) {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	for _, v := range vs {
		t.releaseLocked(v.ID)
	}
}

// releaseContent gives back one reference to the content id.
func (t *Table) releaseContent(id string) {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	t.releaseLocked(id)
}

func (t *Table) releaseLocked(id string) {
	p, ok := t.content[id]
	if !ok {
		return
	}
	if p.refs--; p.refs <= 0 {
		delete(t.content, id)
		t.ruleBytes -= p.size
	}
}

// makeRoom evicts inactive sites until a version of the given body size
// would fit under limit; it reports whether it fits.
func (t *Table) makeRoom(bodyLen int, limit int64) bool {
	size := int64(bodyLen)*parsedFactor + parsedBase
	for {
		if t.fits(size, limit) {
			return true
		}
		if !t.evictOne() {
			return false
		}
	}
}

// fits reports whether size more bytes of rules fit under limit (<= 0: no
// limit).
func (t *Table) fits(size, limit int64) bool {
	t.contentMu.Lock()
	defer t.contentMu.Unlock()
	return limit <= 0 || t.ruleBytes+size <= limit
}

// evictOne evicts one inactive site; false when there is none.
func (t *Table) evictOne() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evictLocked(1, true)
}
