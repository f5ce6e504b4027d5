package sites

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Status describes the robots.txt of one site, as the admin API shows it.
type Status struct {
	// Host is the site's host name; empty for a file or inline source.
	Host string
	// Server is the listen addresses of the server the site is loaded
	// through; empty for a file or inline source.
	Server string
	// State is "ok" (a copy is in force), "pending" (the first load has
	// not finished) or "unavailable" (no copy was ever obtained).
	State string
	// Versions are the versions kept, current first.
	Versions []VersionStatus
	// LastFetch is when the site's robots.txt was last loaded (zero:
	// never); LastResult how it went (ok, client_error, server_error,
	// redirect, error) and LastError why it failed.
	LastFetch  time.Time
	LastResult string
	LastError  string
	// FinalURL is the URL the last load was answered from after
	// following redirects (RFC 9309 §2.3.1.2), on the site or on another
	// host; empty when the site answered /robots.txt itself, and for a
	// file or inline source.
	FinalURL string
	// NextFetch is when the next load is due (zero: not scheduled, and
	// always for a file or inline source).
	NextFetch time.Time
	// Unconfirmed is a change to no rules awaiting confirmation, or nil.
	Unconfirmed *Unconfirmed
	// Warnings are what is wrong with the current version although it
	// loaded: an HTML page, UTF-16, no group, cut at 500 KiB, or (with
	// Config.Trap) no Disallow line for the trap.
	Warnings []string
}

// Unconfirmed is a change from rules to "no rules" that the loader saw but
// has not published: the last rules stay in force until a fetch at
// ConfirmAt or later still sees it (see ConfirmAfter).
type Unconfirmed struct {
	// What is what the site answered, such as "status 404 (no
	// robots.txt)" or "an empty robots.txt".
	What string
	// Since is when the change was first seen.
	Since     time.Time
	ConfirmAt time.Time
}

// VersionStatus describes one version of a site's robots.txt.
type VersionStatus struct {
	ID string
	// From is when the version became current; Until when a newer one
	// replaced it (zero for the current version).
	From, Until time.Time
	Current     bool
	// StartUnknown is set when the version was already current when the
	// loader first loaded it (From): it may have been current long before,
	// so it is never taken for a brief version.
	StartUnknown bool
	// FinalURL is where the version was read when the site's robots.txt
	// redirected (empty when it did not, or the version was read back
	// from storage).
	FinalURL string
}

// Status describes the loader's sites, by host name: for FromSite, those
// of its server (loaders of one server share them; none while the server
// is not known); for FromFile and FromInline, the one site.
func (l *Loader) Status() []Status {
	sts := l.sites()
	out := make([]Status, 0, len(sts))
	for _, st := range sts {
		out = append(out, l.statusOf(st))
	}
	return out
}

// sites returns the loader's sites, sorted by host name.
func (l *Loader) sites() []*site {
	if l.fixed != nil {
		return []*site{l.fixed}
	}
	srv := l.srv.Load()
	if srv == nil {
		return nil
	}
	var out []*site
	for _, st := range l.t.all() {
		if st.key.server == srv.Key {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key.host < out[j].key.host })
	return out
}

func (l *Loader) statusOf(st *site) Status {
	s := Status{Host: st.key.host, Server: st.key.server, Versions: []VersionStatus{}}
	snap := st.snap.Load()
	switch {
	case len(snap.versions) > 0:
		s.State = "ok"
	case snap.Pending:
		s.State = "pending"
	default:
		s.State = "unavailable"
	}
	if len(snap.versions) > 0 {
		cur := snap.versions[0]
		if cur.p != nil {
			s.Warnings = append(s.Warnings, cur.p.warnings...)
		}
		if w := trapWarning(cur.Robots, l.cfg.Trap); w != "" {
			s.Warnings = append(s.Warnings, w)
		}
	}
	for i, v := range snap.versions {
		s.Versions = append(s.Versions, VersionStatus{ID: v.ID, From: v.since, Until: v.Until, Current: i == 0, StartUnknown: !v.startSeen(), FinalURL: v.finalURL})
	}
	st.locked(func() {
		s.LastFetch, s.LastResult, s.LastError, s.FinalURL = st.lastFetch, st.lastResult, st.lastErr, st.finalURL
		if l.fixed == nil {
			s.NextFetch = st.next
		}
		s.Unconfirmed = st.unconfirmedStatus()
	})
	return s
}

// OldestCurrent returns when the current version became current, for the
// site whose current version is the oldest among the sites of the
// loader's table; false when no site has a version.
func (l *Loader) OldestCurrent() (time.Time, bool) {
	sts := []*site{l.fixed}
	if l.fixed == nil {
		sts = l.t.all()
	}
	var oldest time.Time
	found := false
	for _, st := range sts {
		vs := st.snap.Load().versions
		if len(vs) == 0 {
			continue
		}
		if from := vs[0].since; !found || from.Before(oldest) {
			oldest, found = from, true
		}
	}
	return oldest, found
}

// ReloadResult reports the reload of one site.
type ReloadResult struct {
	// Loader is the index, in the loaders given to Reload, of the loader
	// that reloaded the site.
	Loader int
	Host   string
	Server string
	// File is the file read, for a file source.
	File string
	// Result is how the load went: ok, client_error, server_error,
	// redirect or error; "unchanged" for inline text, which has nothing to
	// load; "skipped" while the site's server is not known.
	Result string
	Error  string
	// Previous and Version are the ids of the current version before and
	// after the reload.
	Previous string
	Version  string
	// Unconfirmed is set when the site now says nothing to crawlers but
	// the change awaits confirmation: Version is still the last rules.
	Unconfirmed *Unconfirmed
	// Withdrawn lists the replaced versions ReloadWithdrawing took out of
	// the site's grace window and stored history (Loader is -1 in each).
	Withdrawn []Withdrawal
	// NotWithdrawn says why ReloadWithdrawing withdrew nothing from the
	// site although it was asked to: the load failed, or the change
	// awaits confirmation.
	NotWithdrawn string
}

// reloadParallel is how many sites Reload loads at once.
const reloadParallel = 4

// Reload loads the robots.txt of every site of the loaders now: through
// the server for FromSite, from disk for FromFile; inline text has nothing
// to load. Sites shared by several loaders are loaded once, by the first
// that holds them. Once ctx is done, the sites not loaded yet are reported
// with its error.
func Reload(ctx context.Context, ls []*Loader) []ReloadResult {
	return reloadSites(ctx, ls, false, "")
}

// ReloadWithdrawing is Reload, then, for each site whose load succeeded
// (its current version is what the site serves now), withdraws every
// replaced version from the site's grace window and stored history, as
// DELETE /robots/versions/<id> withdraws one: the current rules apply at
// once to every crawler, whatever copy it may hold. A site whose load
// failed, or whose change to no rules awaits confirmation, keeps its
// versions (ReloadResult.NotWithdrawn says why). who asked is logged with
// each withdrawal.
func ReloadWithdrawing(ctx context.Context, ls []*Loader, who string) []ReloadResult {
	return reloadSites(ctx, ls, true, who)
}

func reloadSites(ctx context.Context, ls []*Loader, withdraw bool, who string) []ReloadResult {
	type job struct {
		idx int
		l   *Loader
		st  *site
	}
	var jobs []job
	seen := map[*site]bool{}
	for i, l := range ls {
		for _, st := range l.sites() {
			if !seen[st] {
				seen[st] = true
				jobs = append(jobs, job{i, l, st})
			}
		}
	}
	results := make([]ReloadResult, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, reloadParallel)
	for n, j := range jobs {
		results[n] = ReloadResult{Loader: j.idx, Host: j.st.key.host, Server: j.st.key.server, Previous: currentID(j.st)}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[n].Result, results[n].Error = "error", ctx.Err().Error()
			results[n].Version = results[n].Previous
			if withdraw {
				results[n].NotWithdrawn = "not reloaded: " + ctx.Err().Error()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			j.l.reload(j.st, &results[n])
			if withdraw {
				j.l.withdrawAfterReload(j.st, &results[n], who)
			}
		}()
	}
	wg.Wait()
	return results
}

// reload loads one site now and fills res with the outcome.
func (l *Loader) reload(st *site, res *ReloadResult) {
	switch l.cfg.Kind {
	case FromSite:
		l.load(st, nil)
		st.locked(func() {
			res.Result, res.Error = st.lastResult, st.lastErr
		})
		if res.Result == "" {
			res.Result = "skipped"
			res.Error = "the site's server is not known yet"
		}
	case FromFile:
		res.File = l.cfg.File
		res.Result = "ok"
		if err := l.reloadFile(st); err != nil {
			res.Result, res.Error = "error", err.Error()
		}
	default:
		res.Result = "unchanged"
	}
	res.Version = currentID(st)
	st.locked(func() {
		res.Unconfirmed = st.unconfirmedStatus()
	})
}

// withdrawAfterReload withdraws st's replaced versions once its reload
// (res) succeeded, and records what it did in res.
func (l *Loader) withdrawAfterReload(st *site, res *ReloadResult, who string) {
	switch {
	case res.Result != "ok" && res.Result != "client_error" && res.Result != "unchanged":
		res.NotWithdrawn = "the reload did not succeed (" + res.Result + "): the versions in grace stay"
		return
	case res.Unconfirmed != nil:
		res.NotWithdrawn = "the change to no rules awaits confirmation: the versions in grace stay"
		return
	}
	res.Withdrawn = l.withdrawReplaced(st, who)
	res.Version = currentID(st)
}

// unconfirmedStatus describes st's unconfirmed change, or nil. Called with
// st.mu held.
func (st *site) unconfirmedStatus() *Unconfirmed {
	u := st.unconfirmed
	if u == nil {
		return nil
	}
	at, _ := st.confirming()
	return &Unconfirmed{What: u.what, Since: u.since, ConfirmAt: at}
}

// reloadFile reads a file source again and publishes it if it changed. It
// does not touch the file watcher's own bookkeeping: the watcher, seeing
// the same content next time, publishes nothing new.
func (l *Loader) reloadFile(st *site) error {
	body, err := ReadFile(l.cfg.File)
	now := time.Now()
	if err == nil {
		err = l.publish(st, l.rules(body))
	}
	if err != nil {
		l.failed(st, err)
	} else {
		l.succeeded(st)
	}
	st.locked(func() {
		st.lastFetch, st.lastResult, st.lastErr = now, "ok", ""
		if err != nil {
			st.lastResult, st.lastErr = "error", err.Error()
		}
	})
	return err
}

func currentID(st *site) string {
	if vs := st.snap.Load().versions; len(vs) > 0 {
		return vs[0].ID
	}
	return ""
}
