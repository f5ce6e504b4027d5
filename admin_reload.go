package caddyrobots

// What an operator does to the sites' robots.txt versions:
// POST /robots/reload loads every site's robots.txt now (with
// ?withdraw_previous=true, then withdraws every replaced version, so the
// new rules apply at once);
// DELETE /robots/versions/<id> withdraws a replaced version.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	// Withdrawn lists the replaced versions withdraw_previous took out of
	// the site's grace window (absent when there were none);
	// NotWithdrawn says why it withdrew nothing from the site.
	Withdrawn    []withdrawnVersion `json:"withdrawn,omitempty"`
	NotWithdrawn string             `json:"not_withdrawn,omitempty"`
}

// withdrawnVersion is one replaced version withdraw_previous withdrew
// from a site, with when it was current there.
type withdrawnVersion struct {
	Version string    `json:"version"`
	From    time.Time `json:"from"`
	Until   time.Time `json:"until"`
}

// reloadReport is the answer of POST /robots/reload.
type reloadReport struct {
	// WithdrawPrevious echoes ?withdraw_previous=true.
	WithdrawPrevious bool           `json:"withdraw_previous,omitempty"`
	Reloaded         []reloadResult `json:"reloaded"`
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

// serveReload answers POST /robots/reload[?withdraw_previous=true].
func (a *adminAPI) serveReload(w http.ResponseWriter, r *http.Request) error {
	withdraw := false
	if v := r.URL.Query().Get("withdraw_previous"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: withdraw_previous=%q: want true or false", v)}
		}
		withdraw = b
	}
	if !withdraw {
		return writeJSON(w, reloadAll(r.Context(), handlers()))
	}
	return writeJSON(w, reloadWithdrawing(r.Context(), handlers(), adminClient(r)))
}

// adminClient names the admin API's client for the log: its address and
// User-Agent.
func adminClient(r *http.Request) string {
	who := r.RemoteAddr
	if ua := r.Header.Get("User-Agent"); ua != "" {
		who += " (" + warnlimit.Shorten(ua, 128) + ")"
	}
	return who
}

// reloadAll loads every site's robots.txt now: through the server for
// source site, from disk for source file; inline text has nothing to load.
// Sites shared by several handlers are loaded once.
func reloadAll(ctx context.Context, hs []*Handler) reloadReport {
	loaders, owners := loadersOf(hs)
	return reloadReportOf(hs, owners, sites.Reload(ctx, loaders), false)
}

// reloadWithdrawing is reloadAll, then withdraws every replaced version of
// each site whose load succeeded: an emergency rule change (a new
// Disallow) applies at once to every crawler instead of after the grace
// window. who asked is logged with each withdrawal.
func reloadWithdrawing(ctx context.Context, hs []*Handler, who string) reloadReport {
	loaders, owners := loadersOf(hs)
	return reloadReportOf(hs, owners, sites.ReloadWithdrawing(ctx, loaders, who), true)
}

// reloadReportOf is the answer for the reload results rs of the loaders of
// owners.
func reloadReportOf(hs, owners []*Handler, rs []sites.ReloadResult, withdraw bool) reloadReport {
	rep := reloadReport{WithdrawPrevious: withdraw, Reloaded: []reloadResult{}}
	for _, r := range rs {
		h := owners[r.Loader]
		res := reloadResult{
			Handler: handlerIndex(hs, h), Source: h.Source, Host: r.Host, Server: r.Server, File: r.File,
			Result: r.Result, Error: r.Error, Previous: r.Previous, Version: r.Version, Changed: r.Version != r.Previous,
		}
		if u := r.Unconfirmed; u != nil {
			res.PendingChange = &pendingChange{What: u.What, Since: u.Since.UTC(), ConfirmAt: u.ConfirmAt.UTC()}
		}
		for _, wd := range r.Withdrawn {
			res.Withdrawn = append(res.Withdrawn, withdrawnVersion{Version: wd.Version, From: wd.From.UTC(), Until: wd.Until.UTC()})
		}
		res.NotWithdrawn = r.NotWithdrawn
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
	done, err := sites.Withdraw(r.Context(), loaders, id, adminClient(r))
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
