package caddyrobots

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// The version history of every site is kept in Caddy's storage, so that a
// crawler holding yesterday's robots.txt is not refused after a restart or
// a deploy: the grace rule needs the versions a crawler may still hold.
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
	maxStoredSites = 4 * maxHosts    // new site histories one process writes
)

// storedSites counts the site histories this process created in storage.
var storedSites atomic.Int64

// storeFull limits the warning about maxStoredSites.
var storeFull logLimiter

// established reports whether a site was requested at least establishAfter
// after it was first seen.
func established(hr *hostRules) bool { return hr.used.Load()-hr.born >= establishAfter }

// persistOrDefer writes the site's history now, or marks it dirty for the
// refresh loop when the site is too new to be worth a file (see
// establishAfter). Called with hr.mu held.
func (s *ruleSource) persistOrDefer(hr *hostRules) {
	if hr.stored || len(hr.snap.Load().versions) > 1 || hr.key.host == "" || established(hr) {
		s.persist(hr)
		return
	}
	hr.dirty.Store(true)
}

// persistDue writes the history of a site held back by persistOrDefer once
// the site is established.
func (s *ruleSource) persistDue(hr *hostRules) {
	if !hr.dirty.Load() || !established(hr) {
		return
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.dirty.Load() {
		s.persist(hr)
	}
}

// storedHistory is the JSON form of a site's versions, newest first.
type storedHistory struct {
	Source   string          `json:"source"`
	Server   string          `json:"server,omitempty"`
	Host     string          `json:"host,omitempty"`
	Versions []storedVersion `json:"versions"`
}

type storedVersion struct {
	ID    string    `json:"id"`
	From  time.Time `json:"from"`
	Until time.Time `json:"until,omitzero"`
}

// storageOf returns Caddy's configured storage, or nil where there is none
// (ctx.Storage panics on a context without a config, as in unit tests).
func storageOf(ctx caddy.Context) (st certmagic.Storage) {
	defer func() {
		if recover() != nil {
			st = nil
		}
	}()
	return ctx.Storage()
}

// historyKey is the storage key of a site's history.
func (s *ruleSource) historyKey(k siteKey) string {
	sum := sha256.Sum256([]byte(s.tableKey + "\x00" + k.server + "\x00" + k.host))
	return historyPrefix + hex.EncodeToString(sum[:12]) + ".json"
}

// persist writes the site's versions to storage in the background. Every
// write stores the snapshot current when it runs, under the site's lock, so
// an older history never overwrites a newer one. Called with hr.mu held.
func (s *ruleSource) persist(hr *hostRules) {
	hr.dirty.Store(false)
	if s.storage == nil {
		return
	}
	if !hr.stored {
		if storedSites.Add(1) > maxStoredSites {
			storedSites.Add(-1)
			if ok, n := storeFull.allow(time.Now()); ok {
				s.h.logger.Warn("robots: too many site histories written by this process; new sites' robots.txt history is not kept in storage",
					zap.Int("max", maxStoredSites), zap.String("host", hr.key.host), zap.Int("suppressed_since_last_warning", n))
			}
			return
		}
		hr.stored = true
	}
	// The keys are taken now, not in the goroutine, which may run after
	// the handler was cleaned up.
	source, historyKey := s.tableKey, s.historyKey(hr.key)
	go func() {
		hr.saveMu.Lock()
		defer hr.saveMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), storageTTL)
		defer cancel()
		snap := hr.snap.Load()
		h := storedHistory{Source: source, Server: hr.key.server, Host: hr.key.host}
		for _, v := range snap.versions {
			key := bodyPrefix + v.ID + ".txt"
			if !s.storage.Exists(ctx, key) {
				if err := s.storage.Store(ctx, key, v.pv.body); err != nil {
					s.h.warnf("robots: cannot keep robots.txt history in storage", zap.String("key", key), zap.Error(err))
					return
				}
			}
			h.Versions = append(h.Versions, storedVersion{ID: v.ID, From: v.From, Until: v.Until})
		}
		data, err := json.Marshal(h)
		if err != nil {
			return
		}
		if err := s.storage.Store(ctx, historyKey, data); err != nil {
			s.h.warnf("robots: cannot keep robots.txt history in storage", zap.String("host", hr.key.host), zap.Error(err))
		}
	}()
}

// restore reads a site's history from storage, once, when the site is
// first seen: the versions still within the longest grace become the
// site's versions, and the site stays pending so that the first bot request
// loads the current file.
func (s *ruleSource) restore(hr *hostRules) {
	if s.storage == nil {
		return
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.restored {
		return
	}
	hr.restored = true
	ctx, cancel := context.WithTimeout(context.Background(), storageTTL)
	defer cancel()
	vs, err := s.readHistory(ctx, hr.key)
	if err != nil {
		s.h.warnf("robots: cannot read robots.txt history from storage", zap.String("host", hr.key.host), zap.Error(err))
		return
	}
	if len(vs) == 0 {
		return
	}
	hr.stored = true
	old := hr.snap.Load()
	if len(old.versions) > 0 {
		s.releaseVersions(vs) // loaded meanwhile; keep what is there
		return
	}
	snap := newSnapshot(vs)
	snap.pending = old.pending
	hr.snap.Store(snap)
}

// readHistory loads the stored versions of a site that are still within
// MaxGrace, with a reference taken on each parsed version.
func (s *ruleSource) readHistory(ctx context.Context, k siteKey) ([]*version, error) {
	key := s.historyKey(k)
	if !s.storage.Exists(ctx, key) {
		return nil, nil
	}
	data, err := s.storage.Load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", key, err)
	}
	var h storedHistory
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", key, err)
	}
	if h.Source != s.tableKey || h.Server != k.server || h.Host != k.host {
		return nil, nil
	}
	horizon := s.h.now().Add(-MaxGrace)
	var vs []*version
	for i, sv := range h.Versions {
		if len(vs) >= maxVersions || (i > 0 && sv.Until.Before(horizon)) {
			break
		}
		body, err := s.storage.Load(ctx, bodyPrefix+sv.ID+".txt")
		if err != nil {
			return vs, fmt.Errorf("loading robots.txt version %s: %w", sv.ID, err)
		}
		if len(body) > enforce.MaxSize+1 || contentID(body) != sv.ID {
			continue // not what was stored: never enforce it
		}
		pv := s.parsed(sv.ID, body, s.h.maxRuleMemory)
		if pv == nil {
			break
		}
		vs = append(vs, &version{Version: policy.Version{Robots: pv.robots, ID: sv.ID, From: sv.From, Until: sv.Until}, pv: pv})
	}
	return vs, nil
}

// contentID is the short content hash that names a version.
func contentID(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:6])
}
