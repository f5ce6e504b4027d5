package sites

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// The version history of every site is kept in storage, so that a crawler
// holding yesterday's robots.txt is not refused after a restart or a
// deploy: the grace rule needs the versions a crawler may still hold.
//
//	caddy-robots/sites/<hash of source, server and host>.json   the history
//	caddy-robots/robots/<version id>.txt                         each body, once
//
// Writes happen in the background after a version changes; a site's
// history is read once, when the site is first seen.
//
// A history is written at once when the site has one in storage already,
// when it holds more than one version (a change: what the grace rule needs
// after a restart), and for file and inline sources. A new site with one
// version is written only once it is established: requested again at
// least establishAfter after it was first seen. So a flood of random Host
// names on a catch-all site writes nothing, and maxStoredSites bounds what
// a patient one can make this process write.
const (
	historyPrefix  = "caddy-robots/sites/"
	bodyPrefix     = "caddy-robots/robots/"
	storageTTL     = 5 * time.Second // bound on one storage call
	establishAfter = 60              // seconds, on the coarse clock
	maxStoredSites = 4 * maxSites    // new site histories one process writes
)

// storedSites counts the site histories this process created in storage.
var storedSites atomic.Int64

// storeFull limits the warning about maxStoredSites.
var storeFull warnlimit.Limiter

// established reports whether a site was requested at least establishAfter
// after it was first seen.
func established(st *site) bool { return st.used.Load()-st.born >= establishAfter }

// persistOrDefer writes the site's history now, or marks it dirty for the
// refresh loop when the site is too new to be worth a file (see
// establishAfter). Called with st.mu held.
func (l *Loader) persistOrDefer(st *site) {
	if st.stored || len(st.snap.Load().versions) > 1 || st.key.host == "" || established(st) {
		l.persist(st)
		return
	}
	st.dirty.Store(true)
}

// persistDue writes the history of a site held back by persistOrDefer once
// the site is established.
func (l *Loader) persistDue(st *site) {
	if !st.dirty.Load() || !established(st) {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dirty.Load() {
		l.persist(st)
	}
}

// storedHistory is the JSON form of a site's versions, newest first.
type storedHistory struct {
	Source string `json:"source"`
	Server string `json:"server,omitempty"`
	Host   string `json:"host,omitempty"`
	// Format 2 says which versions' start was seen (StartUnknown); in a
	// history without it, every version but the oldest replaced another.
	Format   int             `json:"format,omitempty"`
	Versions []storedVersion `json:"versions"`
}

// historyFormat is the Format of the histories this code writes.
const historyFormat = 2

type storedVersion struct {
	ID string `json:"id"`
	// From is when the version became current, or when it was first
	// loaded if StartUnknown (see version).
	From         time.Time `json:"from"`
	Until        time.Time `json:"until,omitzero"`
	StartUnknown bool      `json:"start_unknown,omitempty"`
}

// historyKey is the storage key of a site's history.
func (t *Table) historyKey(k key) string {
	sum := sha256.Sum256([]byte(t.name + "\x00" + k.server + "\x00" + k.host))
	return historyPrefix + hex.EncodeToString(sum[:12]) + ".json"
}

// persist writes the site's versions to storage in the background. Every
// write stores the snapshot current when it runs, under the site's lock, so
// an older history never overwrites a newer one. Called with st.mu held.
func (l *Loader) persist(st *site) {
	st.dirty.Store(false)
	storage := l.cfg.Storage
	if storage == nil {
		return
	}
	if !st.stored {
		if storedSites.Add(1) > maxStoredSites {
			storedSites.Add(-1)
			if ok, n := storeFull.Allow(time.Now()); ok {
				l.cfg.Logger.Warn("robots: too many site histories written by this process; new sites' robots.txt history is not kept in storage",
					zap.Int("max", maxStoredSites), zap.String("host", st.key.host), zap.Int("suppressed_since_last_warning", n))
			}
			return
		}
		st.stored = true
	}
	source, historyKey := l.t.name, l.t.historyKey(st.key)
	go func() {
		st.saveMu.Lock()
		defer st.saveMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), storageTTL)
		defer cancel()
		snap := st.snap.Load()
		h := storedHistory{Source: source, Server: st.key.server, Host: st.key.host, Format: historyFormat}
		for _, v := range snap.versions {
			key := bodyPrefix + v.ID + ".txt"
			if !storage.Exists(ctx, key) {
				if err := storage.Store(ctx, key, v.p.body); err != nil {
					l.warnf("robots: cannot keep robots.txt history in storage", zap.String("key", key), zap.Error(err))
					return
				}
			}
			h.Versions = append(h.Versions, storedVersion{ID: v.ID, From: v.since, Until: v.Until, StartUnknown: !v.startSeen()})
		}
		data, err := json.Marshal(h)
		if err != nil {
			return
		}
		if err := storage.Store(ctx, historyKey, data); err != nil {
			l.warnf("robots: cannot keep robots.txt history in storage", zap.String("host", st.key.host), zap.Error(err))
			return
		}
		ids := make([]string, len(h.Versions))
		for i, v := range h.Versions {
			ids[i] = v.ID
		}
		if !slices.ContainsFunc(st.savedIDs, func(id string) bool { return !slices.Contains(ids, id) }) {
			st.savedIDs = ids
			return
		}
		// A version left the history: its body may be held by none.
		st.savedIDs = ids
		requestSweep(storage, l.cfg.Logger)
	}()
}

// restore reads a site's history from storage, once, when the site is
// first seen: the versions still within KeepFor become the site's
// versions, and the site stays pending so that the first bot request loads
// the current file.
func (l *Loader) restore(st *site) {
	if l.cfg.Storage == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.restored {
		return
	}
	st.restored = true
	ctx, cancel := context.WithTimeout(context.Background(), storageTTL)
	defer cancel()
	vs, ids, err := l.readHistory(ctx, st.key)
	st.setSavedIDs(ids)
	if err != nil {
		l.warnf("robots: cannot read robots.txt history from storage", zap.String("host", st.key.host), zap.Error(err))
		return
	}
	if len(vs) == 0 {
		return
	}
	st.stored = true
	old := st.snap.Load()
	if len(old.versions) > 0 {
		l.t.release(vs) // loaded meanwhile; keep what is there
		return
	}
	snap := newSnapshot(vs)
	snap.Pending = old.Pending
	st.snap.Store(snap)
}

// readHistory loads the stored versions of a site that are still within
// KeepFor, with a reference taken on each parsed version, and the ids of
// every version the stored history names.
func (l *Loader) readHistory(ctx context.Context, k key) ([]*version, []string, error) {
	storage := l.cfg.Storage
	key := l.t.historyKey(k)
	if !storage.Exists(ctx, key) {
		return nil, nil, nil
	}
	data, err := storage.Load(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("loading %s: %w", key, err)
	}
	var h storedHistory
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", key, err)
	}
	if h.Source != l.t.name || h.Server != k.server || h.Host != k.host {
		return nil, nil, nil
	}
	ids := make([]string, len(h.Versions))
	for i, sv := range h.Versions {
		ids[i] = sv.ID
	}
	horizon := l.cfg.Now().Add(-l.cfg.KeepFor)
	var vs []*version
	for i, sv := range h.Versions {
		if len(vs) >= maxVersions || (i > 0 && sv.Until.Before(horizon)) {
			break
		}
		body, err := storage.Load(ctx, bodyPrefix+sv.ID+".txt")
		if errors.Is(err, fs.ErrNotExist) {
			continue // withdrawn, or swept by a process that no longer held it
		}
		if err != nil {
			return vs, ids, fmt.Errorf("loading robots.txt version %s: %w", sv.ID, err)
		}
		if len(body) > enforce.MaxSize+1 || ContentID(body) != sv.ID {
			continue // not what was stored: never enforce it
		}
		p := l.t.acquire(sv.ID)
		if p == nil {
			robots := l.t.parse(body)
			p = l.t.adopt(sv.ID, body, robots, robots.RulesFingerprint(), l.cfg.MaxRuleMemory)
		}
		if p == nil {
			break
		}
		seen := !sv.StartUnknown
		if h.Format < historyFormat {
			seen = i < len(h.Versions)-1
		}
		v := newVersion(p, sv.ID, sv.From, seen)
		v.Until = sv.Until
		vs = append(vs, v)
	}
	return vs, ids, nil
}

// The storage sweep: a body is kept in storage once per content
// (caddy-robots/robots/<id>.txt) and shared by every history that names
// it, so it cannot go when one site's history drops its version. After a
// history drops one (and once after a start), a sweep in the background
// deletes the bodies that no history in storage names and no table of the
// process holds, and that were written more than sweepMinAge ago (a body
// is stored before the history that names it). One sweep at most every
// sweepEvery, at most sweepMax deletions each.
const (
	sweepEvery  = 10 * time.Minute
	sweepMinAge = 10 * time.Minute
	sweepMax    = 1000
)

var janitor = struct {
	sync.Mutex
	storage certmagic.Storage // the storage to sweep next
	logger  *zap.Logger
	due     bool
	running bool
	last    time.Time // the last sweep, or the process's start
	// every and minAge are sweepEvery and sweepMinAge (tests shorten
	// them).
	every, minAge time.Duration
	wake          chan struct{}
}{last: time.Now(), every: sweepEvery, minAge: sweepMinAge, wake: make(chan struct{}, 1)}

// requestSweep asks for a sweep of storage, which runs in the background
// no sooner than sweepEvery after the last one.
func requestSweep(storage certmagic.Storage, logger *zap.Logger) {
	janitor.Lock()
	defer janitor.Unlock()
	janitor.storage, janitor.logger, janitor.due = storage, logger, true
	if !janitor.running {
		janitor.running = true
		go runJanitor()
	}
	select {
	case janitor.wake <- struct{}{}:
	default:
	}
}

func runJanitor() {
	for {
		job, wait, ok := nextSweep()
		if !ok {
			return
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-janitor.wake:
				timer.Stop()
			}
			continue
		}
		if more := sweep(job.storage, job.logger, job.minAge); more {
			sweepAgain()
		}
	}
}

// sweepJob is what one sweep reads.
type sweepJob struct {
	storage certmagic.Storage
	logger  *zap.Logger
	minAge  time.Duration
}

// nextSweep returns the sweep to run now, or how long to wait before it;
// ok is false, and the janitor stops, when none is due.
func nextSweep() (job sweepJob, wait time.Duration, ok bool) {
	janitor.Lock()
	defer janitor.Unlock()
	if !janitor.due {
		janitor.running = false
		return sweepJob{}, 0, false
	}
	if wait := time.Until(janitor.last.Add(janitor.every)); wait > 0 {
		return sweepJob{}, wait, true
	}
	janitor.due, janitor.last = false, time.Now()
	return sweepJob{janitor.storage, janitor.logger, janitor.minAge}, 0, true
}

// sweepAgain marks a sweep due: the last one left work.
func sweepAgain() {
	janitor.Lock()
	defer janitor.Unlock()
	janitor.due = true
}

// sweep deletes the bodies of storage that nothing holds and that were
// written more than minAge ago (see above); it reports whether some are
// left for the next sweep.
func sweep(storage certmagic.Storage, logger *zap.Logger, minAge time.Duration) (more bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bodies, err := storage.List(ctx, strings.TrimSuffix(bodyPrefix, "/"), false)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			logger.Warn("robots: cannot list robots.txt bodies in storage", zap.Error(err))
		}
		return false
	}
	named, err := namedVersions(ctx, storage)
	if err != nil {
		// Better a body too many than a history without its body.
		logger.Warn("robots: cannot read the robots.txt histories in storage; no body deleted", zap.Error(err))
		return false
	}
	deleted := 0
	for _, key := range bodies {
		id := strings.TrimSuffix(path.Base(key), ".txt")
		if named[id] || heldAnywhere(id) {
			continue
		}
		if info, err := storage.Stat(ctx, key); err != nil || time.Since(info.Modified) < minAge {
			continue
		}
		if deleted >= sweepMax {
			more = true
			break
		}
		if err := storage.Delete(ctx, key); err != nil {
			logger.Warn("robots: cannot delete a robots.txt body from storage", zap.String("key", key), zap.Error(err))
			return false
		}
		deleted++
	}
	if deleted > 0 {
		logger.Info("robots: deleted the robots.txt bodies that no history holds any more", zap.Int("deleted", deleted))
	}
	return more
}

// namedVersions returns the ids of the versions every history in storage
// names.
func namedVersions(ctx context.Context, storage certmagic.Storage) (map[string]bool, error) {
	keys, err := storage.List(ctx, strings.TrimSuffix(historyPrefix, "/"), false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing histories: %w", err)
	}
	named := map[string]bool{}
	for _, key := range keys {
		data, err := storage.Load(ctx, key)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", key, err)
		}
		var h storedHistory
		if err := json.Unmarshal(data, &h); err != nil {
			continue // not a history this code can hold a body for
		}
		for _, v := range h.Versions {
			named[v.ID] = true
		}
	}
	return named, nil
}
