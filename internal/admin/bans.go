package admin

// GET /robots/bans and DELETE /robots/bans[/<identity>]: the bans in force
// in every store, and lifting them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// BanEntry is one ban of GET /robots/bans.
type BanEntry struct {
	// Identity is the key DELETE /robots/bans/<identity> takes
	// (path-escaped).
	Identity string `json:"identity"`
	// Crawler is the name the ban is kept under: the crawler's, or "*"
	// for the new names of an address seen rotating names.
	Crawler string `json:"crawler"`
	// Site is the site block (handler) that issued the ban: its host
	// patterns, or "*" for a catch-all; Listen its server's addresses.
	// The ban holds for that site block whatever Host the client sends,
	// and for no other.
	Site   string `json:"site,omitempty"`
	Listen string `json:"listen,omitempty"`
	// Token is the robots.txt token the crawler was judged by ("*" for the
	// wildcard group); EarnedBy the crawler that earned the ban, when it
	// is not Crawler (a rotating address's new names).
	Token    string `json:"token,omitempty"`
	EarnedBy string `json:"earned_by,omitempty"`
	// Since is when the ban started; Strikes the refusals that earned it
	// (the last few): the rule's line, the robots.txt version and when.
	Since    *time.Time  `json:"since,omitempty"`
	Strikes  []BanStrike `json:"strikes,omitempty"`
	Network  string      `json:"network,omitempty"`
	Verified bool        `json:"verified,omitempty"`
	Until    time.Time   `json:"until"`
	Reason   string      `json:"reason"`
	// Store is the type of the store holding the ban.
	Store string `json:"store"`
	// Mode is "enforce" for a ban in force, "log" for a ban earned in mode
	// log: the handler only logs what it would do, so the crawler is not
	// refused; it would be banned.
	Mode string `json:"mode"`
}

// LogModeBan reports whether b was earned in mode log: its scope is the
// site block's kept apart for log mode ("log|" + the block's key, as the
// pipeline's banScope makes it). Such a ban refuses nothing; it says the
// crawler would be banned.
func LogModeBan(b state.Ban) bool { return strings.HasPrefix(b.Identity.Site, "log|") }

// BanStrike is one strike that earned a ban.
type BanStrike struct {
	Line    int       `json:"line"`
	Version string    `json:"version,omitempty"`
	At      time.Time `json:"at"`
}

// BansReport is the answer of GET /robots/bans.
type BansReport struct {
	// Bans are every ban the stores hold, in force or earned in mode log
	// (each entry's Mode says which); InForce and LogMode count each kind.
	Bans      []BanEntry `json:"bans"`
	InForce   int        `json:"in_force"`
	LogMode   int        `json:"log_mode"`
	Truncated bool       `json:"truncated,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
}

// DistinctStores returns the elements of xs whose store (storeOf) no
// earlier element has, and none without a store: handlers and site blocks
// may share one store (a Redis, or the process's memory store), whose bans
// are listed, counted and lifted once.
func DistinctStores[T any](xs []T, storeOf func(T) state.Store) []T {
	seen := map[state.Store]bool{}
	var out []T
	for _, x := range xs {
		st := storeOf(x)
		if st == nil || seen[st] {
			continue
		}
		seen[st] = true
		out = append(out, x)
	}
	return out
}

// siteStore is the store of a Site, for DistinctStores.
func siteStore(s Site) state.Store { return s.Store }

// Bans lists the bans the stores of ss hold at now, in force and earned in
// mode log: the answer of GET /robots/bans.
func Bans(ctx context.Context, ss []Site, now time.Time) BansReport {
	return listBans(ctx, ss, now, nil)
}

// listBans is Bans with the ban listings shared with buildStatus.
func listBans(ctx context.Context, ss []Site, now time.Time, scans banScans) BansReport {
	rep := BansReport{Bans: []BanEntry{}}
	scopes := scopesOf(ss)
	for _, s := range DistinctStores(ss, siteStore) {
		l, ok := s.Store.(state.BanLister)
		if !ok {
			continue
		}
		reason := "strikes"
		if p := s.Strikes; p.Enabled() {
			reason = fmt.Sprintf("strikes: %d refused requests within %s", p.Strikes, p.Window)
		}
		bans, err := scans.list(ctx, s, l, now)
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
		if len(bans) >= state.MaxBansListed {
			rep.Truncated = true
		}
		for _, b := range bans {
			e := banEntryOf(b, reason, s.StoreType, scopes)
			if e.Mode == "log" {
				rep.LogMode++
			} else {
				rep.InForce++
			}
			rep.Bans = append(rep.Bans, e)
		}
	}
	return rep
}

// banEntryOf describes the ban b of a store of type typ; scopes name the
// site blocks of the running handlers by their keys.
func banEntryOf(b state.Ban, reason, typ string, scopes map[string]*Scope) BanEntry {
	e := BanEntry{
		Identity: b.Key,
		Crawler:  b.Identity.Name,
		Site:     b.Identity.Site,
		Verified: b.Identity.Verified,
		Until:    b.Until.UTC(),
		Reason:   reason,
		Store:    typ,
		Mode:     "enforce",
	}
	if LogModeBan(b) {
		e.Mode = "log"
	}
	if sc := scopes[strings.TrimPrefix(b.Identity.Site, "log|")]; sc != nil {
		e.Site, e.Listen = sc.Site, sc.Listen
	} else if b.Info.Scope != "" {
		e.Site = b.Info.Scope // a handler no longer running (or another instance's)
	}
	if info := b.Info; !info.IsZero() {
		e.Token = info.Token
		if info.Crawler != "" && info.Crawler != e.Crawler {
			e.EarnedBy = info.Crawler
		}
		if !info.Since.IsZero() {
			since := info.Since.UTC()
			e.Since = &since
		}
		for _, s := range info.Strikes {
			e.Strikes = append(e.Strikes, BanStrike{Line: s.Line, Version: s.Version, At: s.At.UTC()})
		}
	}
	if b.Identity.Prefix.IsValid() {
		e.Network = b.Identity.Prefix.String()
	}
	return e
}

// serveUnban answers DELETE /robots/bans/<identity>: it lifts that ban in
// every store.
func (a *API) serveUnban(w http.ResponseWriter, r *http.Request) error {
	escaped := strings.TrimPrefix(r.URL.EscapedPath(), "/robots/bans/")
	key, err := url.PathUnescape(escaped)
	if err != nil || key == "" {
		return Error{http.StatusBadRequest, fmt.Errorf("robots: unban: bad identity %q in the path", escaped)}
	}
	id, err := state.ParseIdentity(key)
	if err != nil {
		return Error{http.StatusBadRequest, fmt.Errorf("robots: unban: %w (use an identity as GET /robots/bans lists it, path-escaped)", err)}
	}
	found, err := unban(r.Context(), a.Sites(), key, time.Now())
	if err != nil && !found {
		return Error{http.StatusBadGateway, fmt.Errorf("robots: unban %s: %w", key, err)}
	}
	if !found {
		return Error{http.StatusNotFound, fmt.Errorf("robots: unban: no ban in force for %s", key)}
	}
	a.lifted(r, []BanLifted{{Identity: key, Crawler: id.Name, identity: id}})
	out := map[string]any{"identity": key, "lifted": true}
	if err != nil {
		out["warning"] = err.Error()
	}
	return WriteJSON(w, out)
}

// unban lifts the ban of key in every store of ss; it reports whether any
// store had it.
func unban(ctx context.Context, ss []Site, key string, now time.Time) (bool, error) {
	found := false
	err := forEachBanStore(ctx, ss, func(ctx context.Context, _ Site, l state.BanLister) error {
		ok, err := l.Unban(ctx, key, now)
		found = found || ok
		return err
	})
	return found, err
}

// forEachBanStore calls f with each distinct store of ss that keeps a
// list of bans, each call under the admin API's store deadline, and joins
// their errors.
func forEachBanStore(ctx context.Context, ss []Site, f func(context.Context, Site, state.BanLister) error) error {
	var errs []error
	for _, s := range DistinctStores(ss, siteStore) {
		l, ok := s.Store.(state.BanLister)
		if !ok {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, storeWait)
		err := f(sctx, s, l)
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// serveUnbanWhere lifts every ban that a query selects: ?address=<ip or
// CIDR> (bans of that address or of a network containing it, or within
// that network), ?crawler=<name> (bans kept under that name, or earned by
// it), ?all=true. It answers with the bans lifted.
func (a *API) serveUnbanWhere(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	match, err := banMatcher(q.Get("address"), q.Get("crawler"), q.Get("all"))
	if err != nil {
		return Error{http.StatusBadRequest, err}
	}
	lifted, err := unbanWhere(r.Context(), a.Sites(), match, time.Now())
	a.lifted(r, lifted)
	out := map[string]any{"lifted": lifted}
	if err != nil {
		if len(lifted) == 0 {
			return Error{http.StatusBadGateway, fmt.Errorf("robots: unban: %w", err)}
		}
		out["warning"] = err.Error()
	}
	return WriteJSON(w, out)
}

// banMatcher builds the selection of DELETE /robots/bans: exactly one of
// address, crawler and all=true.
func banMatcher(address, crawler, all string) (func(state.Ban) bool, error) {
	given := 0
	for _, v := range []string{address, crawler, all} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return nil, errors.New("robots: unban: give exactly one of ?address=<ip or CIDR>, ?crawler=<name>, ?all=true (or DELETE /robots/bans/<identity>)")
	}
	switch {
	case all != "":
		if all != "true" {
			return nil, fmt.Errorf("robots: unban: all=%q, want all=true", all)
		}
		return func(state.Ban) bool { return true }, nil
	case crawler != "":
		return func(b state.Ban) bool {
			return strings.EqualFold(b.Identity.Name, crawler) || strings.EqualFold(b.Info.Crawler, crawler)
		}, nil
	}
	var p netip.Prefix
	if strings.Contains(address, "/") {
		pp, err := netip.ParsePrefix(address)
		if err != nil {
			return nil, fmt.Errorf("robots: unban: address %q: %w", address, err)
		}
		p = pp.Masked()
	} else {
		ip, err := netip.ParseAddr(address)
		if err != nil {
			return nil, fmt.Errorf("robots: unban: address %q: %w", address, err)
		}
		ip = ip.Unmap()
		p = netip.PrefixFrom(ip, ip.BitLen())
	}
	return func(b state.Ban) bool {
		bp := b.Identity.Prefix
		return bp.IsValid() && bp.Addr().BitLen() == p.Addr().BitLen() && (bp.Contains(p.Addr()) || p.Contains(bp.Addr()))
	}, nil
}

// unbanWhere lifts the bans match selects in every store of ss.
func unbanWhere(ctx context.Context, ss []Site, match func(state.Ban) bool, now time.Time) ([]BanLifted, error) {
	out := []BanLifted{}
	err := forEachBanStore(ctx, ss, func(ctx context.Context, s Site, l state.BanLister) error {
		lifted, err := l.UnbanWhere(ctx, match, now)
		for _, b := range lifted {
			out = append(out, BanLifted{Identity: b.Key, Crawler: b.Identity.Name, Store: s.StoreType, identity: b.Identity})
		}
		return err
	})
	return out, err
}

// BanLifted is one ban DELETE /robots/bans lifted.
type BanLifted struct {
	Identity string `json:"identity"`
	Crawler  string `json:"crawler"`
	Store    string `json:"store"`
	identity state.Identity
}

// lifted logs the bans an admin request lifted, at INFO, with who asked,
// and announces each.
func (a *API) lifted(r *http.Request, lifted []BanLifted) {
	for _, b := range lifted {
		if a.Logger != nil {
			a.Logger.Info("robots: ban lifted",
				zap.String("identity", b.Identity), zap.String("crawler", b.Crawler), zap.String("by", r.RemoteAddr))
		}
	}
	for _, b := range lifted {
		if a.Lifted != nil {
			a.Lifted(b.identity, b.Identity, r.RemoteAddr)
		}
	}
}

// scopesOf maps the scope keys of ss to their scopes, for naming the site
// block a ban belongs to.
func scopesOf(ss []Site) map[string]*Scope {
	out := map[string]*Scope{}
	for _, s := range ss {
		if s.Scope != nil {
			out[s.Scope.Key] = s.Scope
		}
	}
	return out
}
