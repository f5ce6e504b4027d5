package sites

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// version is one robots.txt version as it was served: what the decision
// reads (policy.Version: the parsed file, its id, when it was current) and
// the shared body it was parsed from. Immutable once published.
//
// since is when the version became current as far as the loader knows.
// From is since when the loader saw the version replace another; it is the
// zero time when the version was already current when the loader first
// loaded it (a site's first load, the first after a restart or after a
// failure), because it may have been current for a day before: no
// crawler's fetch is known to precede it, and it must not be taken for a
// brief version (policy.BriefFor), which earns grace only for the crawlers
// seen fetching it.
type version struct {
	policy.Version
	p     *parsed
	since time.Time
	// finalURL is where the version was read when the site's
	// /robots.txt redirected ("" when it did not; not kept in storage).
	finalURL string
}

// newVersion is a version of p with content id id, current since since;
// seen says the loader saw it replace another (see version).
func newVersion(p *parsed, id string, since time.Time, seen bool) *version {
	v := &version{Version: policy.Version{Robots: p.robots, ID: id}, p: p, since: since}
	if seen {
		v.From = since
	}
	return v
}

// startSeen reports whether the loader saw the version become current.
func (v *version) startSeen() bool { return !v.From.IsZero() }

// Snapshot is what a request reads of its site's robots.txt: the versions
// a crawler may still hold, newest first, and whether there are any yet.
// It is immutable and shared: a load swaps in a new one.
type Snapshot struct {
	// Judged are the versions as the decision reads them, newest first;
	// the first is the current one. Empty while no copy was ever obtained
	// (see Unavailable and Pending).
	Judged []*policy.Version
	// Unavailable is set while no copy was ever obtained because the
	// source failed (5xx, 429, a timeout, an unreachable backend, an
	// incomplete body), or the table had no room for the site.
	Unavailable bool
	// Pending is set before the site's first load finished.
	Pending bool

	versions []*version // Judged, with the shared bodies
}

// Current returns the current version, or nil when there is none (a nil
// Snapshot has none).
func (s *Snapshot) Current() *policy.Version {
	if s == nil || len(s.Judged) == 0 {
		return nil
	}
	return s.Judged[0]
}

// Body returns the body of the current version as it was loaded (at most
// enforce.MaxSize+1 bytes), or nil when there is none. It is shared: the
// caller must not modify it.
func (s *Snapshot) Body() []byte {
	if s == nil || len(s.versions) == 0 {
		return nil
	}
	return s.versions[0].p.body
}

// newSnapshot is the snapshot of vs (newest first), loaded.
func newSnapshot(vs []*version) *Snapshot {
	s := &Snapshot{versions: vs, Judged: make([]*policy.Version, len(vs))}
	for i, v := range vs {
		s.Judged[i] = &v.Version
	}
	return s
}

var (
	// pendingSnap is a new site's snapshot until its first load.
	pendingSnap = &Snapshot{Pending: true}
	// unavailableSnap is a site's snapshot while its source failed and
	// no copy was ever obtained, and what a site gets while the table has
	// no room for it.
	unavailableSnap = &Snapshot{Unavailable: true}
)

// ContentID returns the short content hash that names a robots.txt
// version: the first 6 bytes of the body's SHA-256, in hex.
func ContentID(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:6])
}
