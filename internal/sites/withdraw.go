package sites

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
)

// Withdrawing a version: a robots.txt that should never have been served
// (a broken file live for seven seconds) stays in the grace window for
// 24 hours, and across restarts, letting every crawler that may hold it
// read what it allowed. Withdraw takes it out of every site's versions and
// stored history, so the decision no longer counts it. The current
// version cannot be withdrawn: it is what the site serves; replace it
// first.

// ErrUnknownVersion is returned by Withdraw when no site holds the version.
var ErrUnknownVersion = errors.New("no site holds this robots.txt version")

// ErrBadVersion is returned by Withdraw for an id that is not a version id
// (12 lower-case hex digits, as ContentID makes them).
var ErrBadVersion = errors.New("not a robots.txt version id (12 hex digits)")

// CurrentError is returned by Withdraw when the version is the current one
// of a site: it cannot be withdrawn while the site serves it.
type CurrentError struct {
	ID     string
	Host   string
	Server string
	// Stored is set when the site is not loaded and its stored history
	// names the version as the one it served last.
	Stored bool
}

// Error says whose current version it is.
func (e *CurrentError) Error() string {
	site := e.Host
	if site == "" {
		site = "the file or inline source"
	}
	if e.Stored {
		return fmt.Sprintf("robots.txt version %s was the current version of %s when it was last loaded; it can be withdrawn once %s has a newer one", e.ID, site, site)
	}
	return fmt.Sprintf("robots.txt version %s is the current version of %s; only a replaced version can be withdrawn", e.ID, site)
}

// Withdrawal is one site a version was withdrawn from.
type Withdrawal struct {
	// Loader is the index, in the loaders given to Withdraw, of a loader
	// of the site's table; -1 when only the site's stored history held
	// the version (the site is not loaded).
	Loader int
	Host   string
	Server string
	// Version is the id of the version withdrawn.
	Version string
	// From and Until are when the version was current at the site.
	From, Until time.Time
}

// withdrawMu serialises withdrawals.
var withdrawMu sync.Mutex

// Withdraw takes the version id out of every site of the loaders' tables
// that holds it as a replaced version, and out of every history in their
// storage, logging each site with who asked. It fails with a
// *CurrentError when some site holds it as its current version (nothing
// is withdrawn then), ErrUnknownVersion when no site holds it, and
// ErrBadVersion for an id that is not one.
func Withdraw(ctx context.Context, ls []*Loader, id, who string) ([]Withdrawal, error) {
	if !isVersionID(id) {
		return nil, ErrBadVersion
	}
	withdrawMu.Lock()
	defer withdrawMu.Unlock()
	// The tables and storages of the loaders, each once.
	var tables []*Table
	var first []int // a loader of each table
	var storages []certmagic.Storage
	var storer []int // a loader of each storage
	for i, l := range ls {
		if !slices.Contains(tables, l.t) {
			tables, first = append(tables, l.t), append(first, i)
		}
		if s := l.cfg.Storage; s != nil && !slices.ContainsFunc(storages, func(o certmagic.Storage) bool { return sameStorage(o, s) }) {
			storages, storer = append(storages, s), append(storer, i)
		}
	}
	// Where the version is held: loaded sites, then stored histories of
	// sites not loaded.
	type held struct {
		ti int
		st *site
	}
	var live []held
	for ti, t := range tables {
		for _, st := range t.all() {
			vs := st.snap.Load().versions
			for i, v := range vs {
				if v.ID != id {
					continue
				}
				if i == 0 {
					return nil, &CurrentError{ID: id, Host: st.key.host, Server: st.key.server}
				}
				live = append(live, held{ti, st})
				break
			}
		}
	}
	type offline struct {
		si  int
		key string
		h   storedHistory
	}
	var stored []offline
	for si, s := range storages {
		keys, err := s.List(ctx, strings.TrimSuffix(historyPrefix, "/"), false)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("listing the histories in storage: %w", err)
		}
		for _, key := range keys {
			data, err := s.Load(ctx, key)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("loading %s: %w", key, err)
			}
			var h storedHistory
			if json.Unmarshal(data, &h) != nil {
				continue
			}
			i := slices.IndexFunc(h.Versions, func(v storedVersion) bool { return v.ID == id })
			if i < 0 || loaded(tables, h) {
				continue
			}
			if i == 0 {
				return nil, &CurrentError{ID: id, Host: h.Host, Server: h.Server, Stored: true}
			}
			stored = append(stored, offline{si, key, h})
		}
	}
	if len(live) == 0 && len(stored) == 0 {
		return nil, ErrUnknownVersion
	}
	// Storage first: a site loaded meanwhile read the history before this
	// rewrites it, and the pass over loaded sites below finds it.
	var out []Withdrawal
	for _, o := range stored {
		v := o.h.Versions[slices.IndexFunc(o.h.Versions, func(v storedVersion) bool { return v.ID == id })]
		o.h.Versions = slices.DeleteFunc(o.h.Versions, func(v storedVersion) bool { return v.ID == id })
		if o.h.Format < historyFormat {
			// Its oldest version keeps its meaning (see readHistory).
			for i := range o.h.Versions {
				o.h.Versions[i].StartUnknown = i == len(o.h.Versions)-1
			}
			o.h.Format = historyFormat
		}
		data, err := json.Marshal(o.h)
		if err == nil {
			err = storages[o.si].Store(ctx, o.key, data)
		}
		if err != nil {
			return out, fmt.Errorf("rewriting the history of %s: %w", o.h.Host, err)
		}
		l := ls[storer[o.si]]
		w := Withdrawal{Loader: -1, Host: o.h.Host, Server: o.h.Server, Version: id, From: v.From, Until: v.Until}
		l.logWithdrawal(id, w, o.h.Source, who, true)
		out = append(out, w)
		requestSweep(storages[o.si], l.cfg.Logger)
	}
	for _, h := range live {
		l := ls[first[h.ti]]
		for i, x := range ls {
			if x.t == tables[h.ti] && x.Server() == h.st.key.server {
				l = ls[i] // the loader of the site's own server logs it
				break
			}
		}
		w, ok := l.withdraw(h.st, id)
		if !ok {
			continue
		}
		w.Loader = slices.Index(ls, l)
		l.logWithdrawal(id, w, l.t.name, who, false)
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, ErrUnknownVersion
	}
	return out, nil
}

// withdraw takes the version id out of st's replaced versions (every time
// it was served) and writes st's history; false when st no longer holds it
// but as its current version.
func (l *Loader) withdraw(st *site, id string) (Withdrawal, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.snap.Load()
	if len(old.versions) < 2 || old.versions[0].ID == id {
		return Withdrawal{}, false
	}
	var gone []*version
	vs := []*version{old.versions[0]}
	for _, v := range old.versions[1:] {
		if v.ID == id {
			gone = append(gone, v)
		} else {
			vs = append(vs, v)
		}
	}
	if len(gone) == 0 {
		return Withdrawal{}, false
	}
	snap := newSnapshot(vs)
	snap.Pending, snap.Unavailable = old.Pending, old.Unavailable
	st.snap.Store(snap)
	l.t.release(gone)
	l.persistOrDefer(st)
	v := gone[0]
	return Withdrawal{Host: st.key.host, Server: st.key.server, Version: id, From: v.since, Until: v.Until}, true
}

// withdrawReplaced takes every replaced version out of st's versions and
// writes st's history, so that its current version alone decides for
// every crawler at once (no grace); it returns what it withdrew, each time
// a version was served, newest first. who asked is logged with each.
func (l *Loader) withdrawReplaced(st *site, who string) []Withdrawal {
	withdrawMu.Lock()
	defer withdrawMu.Unlock()
	st.mu.Lock()
	old := st.snap.Load()
	if len(old.versions) < 2 {
		st.mu.Unlock()
		return nil
	}
	gone := old.versions[1:]
	snap := newSnapshot(old.versions[:1])
	snap.Pending, snap.Unavailable = old.Pending, old.Unavailable
	st.snap.Store(snap)
	l.t.release(gone)
	l.persistOrDefer(st)
	st.mu.Unlock()
	out := make([]Withdrawal, 0, len(gone))
	for _, v := range gone {
		w := Withdrawal{Loader: -1, Host: st.key.host, Server: st.key.server, Version: v.ID, From: v.since, Until: v.Until}
		l.logWithdrawal(v.ID, w, l.t.name, who, false)
		out = append(out, w)
	}
	return out
}

func (l *Loader) logWithdrawal(id string, w Withdrawal, source, who string, stored bool) {
	l.cfg.Logger.Info("robots: robots.txt version withdrawn from the grace window",
		zap.String("version", id), zap.String("source", source), zap.String("host", w.Host), zap.String("server", w.Server),
		zap.Time("from", w.From), zap.Time("until", w.Until), zap.Bool("stored_only", stored), zap.String("by", who))
}

// loaded reports whether the site of history h is in one of tables.
func loaded(tables []*Table, h storedHistory) bool {
	for _, t := range tables {
		if t.name == h.Source && t.lookup(key{server: h.Server, host: h.Host}) != nil {
			return true
		}
	}
	return false
}

// sameStorage reports whether a and b are the same storage (false for
// values that cannot be compared).
func sameStorage(a, b certmagic.Storage) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// isVersionID reports whether id is a version id as ContentID makes them.
func isVersionID(id string) bool {
	if len(id) != 12 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
