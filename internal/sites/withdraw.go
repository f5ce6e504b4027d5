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
	p := newWithdrawPlan(ls)
	live, err := p.loadedHolders(id)
	if err != nil {
		return nil, err
	}
	stored, err := p.storedHolders(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(live) == 0 && len(stored) == 0 {
		return nil, ErrUnknownVersion
	}
	// Storage first: a site loaded meanwhile read the history before this
	// rewrites it, and the pass over loaded sites below finds it.
	out, err := p.withdrawStored(ctx, stored, id, who)
	if err != nil {
		return out, err
	}
	out = append(out, p.withdrawLoaded(live, id, who)...)
	if len(out) == 0 {
		return nil, ErrUnknownVersion
	}
	return out, nil
}

// withdrawPlan is the tables and storages of the loaders of a withdrawal,
// each once.
type withdrawPlan struct {
	ls       []*Loader
	tables   []*Table
	first    []int // a loader of each table
	storages []certmagic.Storage
	storer   []int // a loader of each storage
}

func newWithdrawPlan(ls []*Loader) *withdrawPlan {
	p := &withdrawPlan{ls: ls}
	for i, l := range ls {
		if !slices.Contains(p.tables, l.t) {
			p.tables, p.first = append(p.tables, l.t), append(p.first, i)
		}
		if s := l.cfg.Storage; s != nil && !slices.ContainsFunc(p.storages, func(o certmagic.Storage) bool { return sameStorage(o, s) }) {
			p.storages, p.storer = append(p.storages, s), append(p.storer, i)
		}
	}
	return p
}

// loadedHolder is a loaded site that holds a version, in table ti.
type loadedHolder struct {
	ti int
	st *site
}

// loadedHolders returns the loaded sites that hold id as a replaced
// version; a *CurrentError when one holds it as its current version.
func (p *withdrawPlan) loadedHolders(id string) ([]loadedHolder, error) {
	var live []loadedHolder
	for ti, t := range p.tables {
		for _, st := range t.all() {
			vs := st.snap.Load().versions
			for i, v := range vs {
				if v.ID != id {
					continue
				}
				if i == 0 {
					return nil, &CurrentError{ID: id, Host: st.key.host, Server: st.key.server}
				}
				live = append(live, loadedHolder{ti, st})
				break
			}
		}
	}
	return live, nil
}

// storedHolder is the stored history, under key in storage si, of a site
// not loaded that holds a version.
type storedHolder struct {
	si  int
	key string
	h   storedHistory
}

// storedHolders returns the stored histories of sites not loaded that
// hold id as a replaced version; a *CurrentError when one holds it as its
// current version.
func (p *withdrawPlan) storedHolders(ctx context.Context, id string) ([]storedHolder, error) {
	var stored []storedHolder
	for si, s := range p.storages {
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
			if i < 0 || loaded(p.tables, h) {
				continue
			}
			if i == 0 {
				return nil, &CurrentError{ID: id, Host: h.Host, Server: h.Server, Stored: true}
			}
			stored = append(stored, storedHolder{si, key, h})
		}
	}
	return stored, nil
}

// withdrawStored rewrites the stored histories without id, and returns
// what it withdrew (so far, on an error).
func (p *withdrawPlan) withdrawStored(ctx context.Context, stored []storedHolder, id, who string) ([]Withdrawal, error) {
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
			err = p.storages[o.si].Store(ctx, o.key, data)
		}
		if err != nil {
			return out, fmt.Errorf("rewriting the history of %s: %w", o.h.Host, err)
		}
		l := p.ls[p.storer[o.si]]
		w := Withdrawal{Loader: -1, Host: o.h.Host, Server: o.h.Server, Version: id, From: v.From, Until: v.Until}
		l.logWithdrawal(id, w, o.h.Source, who, true)
		out = append(out, w)
		requestSweep(p.storages[o.si], l.cfg.Logger)
	}
	return out, nil
}

// withdrawLoaded takes id out of the loaded sites that hold it, each
// logged by the loader of the site's own server, and returns what it
// withdrew.
func (p *withdrawPlan) withdrawLoaded(live []loadedHolder, id, who string) []Withdrawal {
	var out []Withdrawal
	for _, h := range live {
		l := p.ls[p.first[h.ti]]
		for i, x := range p.ls {
			if x.t == p.tables[h.ti] && x.Server() == h.st.key.server {
				l = p.ls[i] // the loader of the site's own server logs it
				break
			}
		}
		w, ok := l.withdraw(h.st, id)
		if !ok {
			continue
		}
		w.Loader = slices.Index(p.ls, l)
		l.logWithdrawal(id, w, l.t.name, who, false)
		out = append(out, w)
	}
	return out
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

// dropReplaced takes every replaced version out of st's versions, writes
// st's history, and returns the versions it took out.
func (l *Loader) dropReplaced(st *site) []*version {
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.snap.Load()
	if len(old.versions) < 2 {
		return nil
	}
	gone := old.versions[1:]
	snap := newSnapshot(old.versions[:1])
	snap.Pending, snap.Unavailable = old.Pending, old.Unavailable
	st.snap.Store(snap)
	l.t.release(gone)
	l.persistOrDefer(st)
	return gone
}

// withdrawReplaced takes every replaced version out of st's versions and
// writes st's history, so that its current version alone decides for
// every crawler at once (no grace); it returns what it withdrew, each time
// a version was served, newest first. who asked is logged with each.
func (l *Loader) withdrawReplaced(st *site, who string) []Withdrawal {
	withdrawMu.Lock()
	defer withdrawMu.Unlock()
	gone := l.dropReplaced(st)
	if len(gone) == 0 {
		return nil
	}
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
