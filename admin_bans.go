package caddyrobots

// GET /robots/bans and DELETE /robots/bans/<identity>: the bans in force in
// every store, and lifting one.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// banEntry is one ban of GET /robots/bans.
type banEntry struct {
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
	Strikes  []banStrike `json:"strikes,omitempty"`
	Network  string      `json:"network,omitempty"`
	Verified bool        `json:"verified,omitempty"`
	Until    time.Time   `json:"until"`
	Reason   string      `json:"reason"`
	// Store is the type of the store holding the ban.
	Store string `json:"store"`
}

// banStrike is one strike that earned a ban.
type banStrike struct {
	Line    int       `json:"line"`
	Version string    `json:"version,omitempty"`
	At      time.Time `json:"at"`
}

// bansReport is the answer of GET /robots/bans.
type bansReport struct {
	Bans      []banEntry `json:"bans"`
	Truncated bool       `json:"truncated,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
}

// distinctStores returns the stores of hs, each once, with the first
// handler that uses it.
func distinctStores(hs []*Handler) []*Handler {
	seen := map[state.Store]bool{}
	var out []*Handler
	for _, h := range hs {
		if h.store == nil || seen[h.store] {
			continue
		}
		seen[h.store] = true
		out = append(out, h)
	}
	return out
}

// storeType is the type of h's throttle and strike store: memory or redis.
func (h *Handler) storeType() string {
	if h.Store != nil && h.Store.Type != "" {
		return h.Store.Type
	}
	return "memory"
}

func (a *adminAPI) serveBans(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, listBans(r.Context(), handlers(), time.Now(), nil))
}

// listBans lists the bans in force in the stores of hs; scans may be shared
// with buildStatus.
func listBans(ctx context.Context, hs []*Handler, now time.Time, scans banScans) bansReport {
	rep := bansReport{Bans: []banEntry{}}
	scopes := scopesOf(hs)
	for _, h := range distinctStores(hs) {
		l, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		typ := h.storeType()
		reason := "strikes"
		if p := h.strikes; p.Enabled() {
			reason = fmt.Sprintf("strikes: %d refused requests within %s", p.Strikes, p.Window)
		}
		bans, err := scans.list(ctx, h, l, now)
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
		if len(bans) >= state.MaxBansListed {
			rep.Truncated = true
		}
		for _, b := range bans {
			e := banEntry{
				Identity: b.Key,
				Crawler:  b.Identity.Name,
				Site:     b.Identity.Site,
				Verified: b.Identity.Verified,
				Until:    b.Until.UTC(),
				Reason:   reason,
				Store:    typ,
			}
			if sc := scopes[strings.TrimPrefix(b.Identity.Site, "log|")]; sc != nil {
				e.Site, e.Listen = sc.site, sc.listen
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
					e.Strikes = append(e.Strikes, banStrike{Line: s.Line, Version: s.Version, At: s.At.UTC()})
				}
			}
			if b.Identity.Prefix.IsValid() {
				e.Network = b.Identity.Prefix.String()
			}
			rep.Bans = append(rep.Bans, e)
		}
	}
	return rep
}

func (a *adminAPI) serveUnban(w http.ResponseWriter, r *http.Request) error {
	escaped := strings.TrimPrefix(r.URL.EscapedPath(), "/robots/bans/")
	key, err := url.PathUnescape(escaped)
	if err != nil || key == "" {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: unban: bad identity %q in the path", escaped)}
	}
	if _, err := state.ParseIdentity(key); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: unban: %w (use an identity as GET /robots/bans lists it, path-escaped)", err)}
	}
	id, _ := state.ParseIdentity(key)
	found, err := unban(r.Context(), handlers(), key, time.Now())
	if err != nil && !found {
		return caddy.APIError{HTTPStatus: http.StatusBadGateway, Err: fmt.Errorf("robots: unban %s: %w", key, err)}
	}
	if !found {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: unban: no ban in force for %s", key)}
	}
	logLifted(r, []banLifted{{Identity: key, Crawler: id.Name}})
	emitLifted(id, key, r.RemoteAddr)
	out := map[string]any{"identity": key, "lifted": true}
	if err != nil {
		out["warning"] = err.Error()
	}
	return writeJSON(w, out)
}

// unban lifts the ban of key in every store of hs; it reports whether any
// store had it.
func unban(ctx context.Context, hs []*Handler, key string, now time.Time) (bool, error) {
	found := false
	err := forEachBanStore(ctx, hs, func(ctx context.Context, _ *Handler, l state.BanLister) error {
		ok, err := l.Unban(ctx, key, now)
		found = found || ok
		return err
	})
	return found, err
}

// forEachBanStore calls f with each distinct store of hs that keeps a
// list of bans, each call under the admin API's store deadline, and joins
// their errors.
func forEachBanStore(ctx context.Context, hs []*Handler, f func(context.Context, *Handler, state.BanLister) error) error {
	var errs []error
	for _, h := range distinctStores(hs) {
		l, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, adminStoreWait)
		err := f(sctx, h, l)
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
func (a *adminAPI) serveUnbanWhere(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	match, err := banMatcher(q.Get("address"), q.Get("crawler"), q.Get("all"))
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	lifted, err := unbanWhere(r.Context(), handlers(), match, time.Now())
	logLifted(r, lifted)
	for _, b := range lifted {
		emitLifted(b.identity, b.Identity, r.RemoteAddr)
	}
	out := map[string]any{"lifted": lifted}
	if err != nil {
		if len(lifted) == 0 {
			return caddy.APIError{HTTPStatus: http.StatusBadGateway, Err: fmt.Errorf("robots: unban: %w", err)}
		}
		out["warning"] = err.Error()
	}
	return writeJSON(w, out)
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

// unbanWhere lifts the bans match selects in every store of hs.
func unbanWhere(ctx context.Context, hs []*Handler, match func(state.Ban) bool, now time.Time) ([]banLifted, error) {
	out := []banLifted{}
	err := forEachBanStore(ctx, hs, func(ctx context.Context, h *Handler, l state.BanLister) error {
		lifted, err := l.UnbanWhere(ctx, match, now)
		for _, b := range lifted {
			out = append(out, banLifted{Identity: b.Key, Crawler: b.Identity.Name, Store: h.storeType(), identity: b.Identity})
		}
		return err
	})
	return out, err
}

// banLifted is one ban DELETE /robots/bans lifted.
type banLifted struct {
	Identity string `json:"identity"`
	Crawler  string `json:"crawler"`
	Store    string `json:"store"`
	identity state.Identity
}

// logLifted logs the bans an admin request lifted, at INFO, with who
// asked.
func logLifted(r *http.Request, lifted []banLifted) {
	for _, b := range lifted {
		caddy.Log().Named("admin.api.robots").Info("robots: ban lifted",
			zap.String("identity", b.Identity), zap.String("crawler", b.Crawler), zap.String("by", r.RemoteAddr))
	}
}

// scopesOf maps the scope keys of hs to their scopes, for naming the site
// block a ban belongs to.
func scopesOf(hs []*Handler) map[string]*handlerScope {
	out := map[string]*handlerScope{}
	for _, h := range hs {
		if h.scope == nil {
			continue
		}
		if sc := h.scope.Load(); sc != nil {
			out[sc.key] = sc
		}
	}
	return out
}
