package caddyrobots

// GET /robots/bans and DELETE /robots/bans/<identity>: the bans in force in
// every store, and lifting one.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyserver/caddy/v2"
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
	Site     string    `json:"site,omitempty"`
	Listen   string    `json:"listen,omitempty"`
	Network  string    `json:"network,omitempty"`
	Verified bool      `json:"verified,omitempty"`
	Until    time.Time `json:"until"`
	Reason   string    `json:"reason"`
	// Store is the type of the store holding the ban.
	Store string `json:"store"`
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
	found, err := unban(r.Context(), handlers(), key, time.Now())
	if err != nil && !found {
		return caddy.APIError{HTTPStatus: http.StatusBadGateway, Err: fmt.Errorf("robots: unban %s: %w", key, err)}
	}
	if !found {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: unban: no ban in force for %s", key)}
	}
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
	var errs []error
	for _, h := range distinctStores(hs) {
		l, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		uctx, cancel := context.WithTimeout(ctx, adminStoreWait)
		ok, err := l.Unban(uctx, key, now)
		cancel()
		found = found || ok
		if err != nil {
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
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
