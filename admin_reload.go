package caddyrobots

// What an operator does to the sites' robots.txt versions:
// POST /robots/reload loads every site's robots.txt now;
// DELETE /robots/versions/<id> withdraws a replaced version.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddyrobots/caddy-robots/internal/sites"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// reloadResult reports the reload of one site.
type reloadResult struct {
	Handler  int    `json:"handler"`
	Source   string `json:"source"`
	Host     string `json:"host,omitempty"`
	Server   string `json:"server,omitempty"`
	File     string `json:"file,omitempty"`
	Result   string `json:"result"`
	Error    string `json:"error,omitempty"`
	Previous string `json:"previous,omitempty"`
	Version  string `json:"version,omitempty"`
	Changed  bool   `json:"changed"`
	// PendingChange is set when the site now says nothing to crawlers
	// and the change awaits confirmation: Version is still the last rules.
	PendingChange *pendingChange `json:"pending_change,omitempty"`
}

// reloadReport is the answer of POST /robots/reload.
type reloadReport struct {
	Reloaded []reloadResult `json:"reloaded"`
}

// loadersOf returns the site tables of the handlers in hs that load rules,
// each with its handler.
func loadersOf(hs []*Handler) (loaders []*sites.Loader, owners []*Handler) {
	for _, h := range hs {
		if h.rules != nil {
			loaders = append(loaders, h.rules.Loader)
			owners = append(owners, h)
		}
	}
	return loaders, owners
}

// reloadAll loads every site's robots.txt now: through the server for
// source site, from disk for source file; inline text has nothing to load.
// Sites shared by several handlers are loaded once.
func reloadAll(ctx context.Context, hs []*Handler) reloadReport {
	loaders, owners := loadersOf(hs)
	rep := reloadReport{Reloaded: []reloadResult{}}
	for _, r := range sites.Reload(ctx, loaders) {
		h := owners[r.Loader]
		res := reloadResult{
			Handler: handlerIndex(hs, h), Source: h.Source, Host: r.Host, Server: r.Server, File: r.File,
			Result: r.Result, Error: r.Error, Previous: r.Previous, Version: r.Version, Changed: r.Version != r.Previous,
		}
		if u := r.Unconfirmed; u != nil {
			res.PendingChange = &pendingChange{What: u.What, Since: u.Since.UTC(), ConfirmAt: u.ConfirmAt.UTC()}
		}
		rep.Reloaded = append(rep.Reloaded, res)
	}
	return rep
}

// handlerIndex is h's position in hs, as /robots/status numbers handlers.
func handlerIndex(hs []*Handler, h *Handler) int {
	for i, x := range hs {
		if x == h {
			return i
		}
	}
	return -1
}

// withdrawReport is the answer of DELETE /robots/versions/<id>.
type withdrawReport struct {
	Version   string          `json:"version"`
	Withdrawn []withdrawnSite `json:"withdrawn"`
}

// withdrawnSite is one site a version was withdrawn from.
type withdrawnSite struct {
	// Handler is the index of a handler serving the site; absent when
	// only the site's stored history held the version (StoredOnly).
	Handler    *int      `json:"handler,omitempty"`
	Host       string    `json:"host,omitempty"`
	Server     string    `json:"server,omitempty"`
	From       time.Time `json:"from"`
	Until      time.Time `json:"until"`
	StoredOnly bool      `json:"stored_only,omitempty"`
}

// serveWithdraw withdraws the version named by the path from every site's
// grace window and stored history: a robots.txt that should never have
// been served stops counting at once, instead of letting every crawler
// that may hold it read what it allowed for the grace period. The current
// version cannot be withdrawn (409); an unknown id is 404.
func (a *adminAPI) serveWithdraw(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimPrefix(r.URL.Path, "/robots/versions/")
	hs := handlers()
	loaders, owners := loadersOf(hs)
	who := r.RemoteAddr
	if ua := r.Header.Get("User-Agent"); ua != "" {
		who += " (" + warnlimit.Shorten(ua, 128) + ")"
	}
	done, err := sites.Withdraw(r.Context(), loaders, id, who)
	var cur *sites.CurrentError
	switch {
	case errors.As(err, &cur):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: fmt.Errorf("robots: %w", err)}
	case errors.Is(err, sites.ErrBadVersion):
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: %q: %w", id, err)}
	case errors.Is(err, sites.ErrUnknownVersion):
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: version %s: %w (see /robots/status)", id, err)}
	case err != nil && len(done) == 0:
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: fmt.Errorf("robots: withdrawing version %s: %w", id, err)}
	}
	rep := withdrawReport{Version: id, Withdrawn: []withdrawnSite{}}
	for _, d := range done {
		ws := withdrawnSite{Host: d.Host, Server: d.Server, From: d.From.UTC(), Until: d.Until.UTC(), StoredOnly: d.Loader < 0}
		if d.Loader >= 0 {
			i := handlerIndex(hs, owners[d.Loader])
			ws.Handler = &i
		}
		rep.Withdrawn = append(rep.Withdrawn, ws)
	}
	if err != nil {
		// Some sites were done before storage failed: say which, and why.
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: fmt.Errorf("robots: withdrawing version %s: %w (withdrawn from %d sites)", id, err, len(rep.Withdrawn))}
	}
	return writeJSON(w, rep)
}
