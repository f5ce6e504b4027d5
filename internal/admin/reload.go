package admin

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

	"github.com/caddyrobots/caddy-robots/internal/sites"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// ReloadResult reports the reload of one site.
type ReloadResult struct {
	// Handler is the index of the handler whose site block serves the
	// site; SiteBlock names that block.
	Handler   int    `json:"handler"`
	SiteBlock string `json:"site_block"`
	Source    string `json:"source"`
	Host      string `json:"host,omitempty"`
	Server    string `json:"server,omitempty"`
	File      string `json:"file,omitempty"`
	Result    string `json:"result"`
	Error     string `json:"error,omitempty"`
	Previous  string `json:"previous,omitempty"`
	Version   string `json:"version,omitempty"`
	Changed   bool   `json:"changed"`
	// PendingChange is set when the site now says nothing to crawlers
	// and the change awaits confirmation: Version is still the last rules.
	PendingChange *PendingChange `json:"pending_change,omitempty"`
	// Withdrawn lists the replaced versions withdraw_previous took out of
	// the site's grace window (absent when there were none);
	// NotWithdrawn says why it withdrew nothing from the site.
	Withdrawn    []WithdrawnVersion `json:"withdrawn,omitempty"`
	NotWithdrawn string             `json:"not_withdrawn,omitempty"`
}

// WithdrawnVersion is one replaced version withdraw_previous withdrew
// from a site, with when it was current there.
type WithdrawnVersion struct {
	Version string    `json:"version"`
	From    time.Time `json:"from"`
	Until   time.Time `json:"until"`
}

// ReloadReport is the answer of POST /robots/reload.
type ReloadReport struct {
	// WithdrawPrevious echoes ?withdraw_previous=true.
	WithdrawPrevious bool           `json:"withdraw_previous,omitempty"`
	Reloaded         []ReloadResult `json:"reloaded"`
}

// loadersOf returns the site tables of the handlers in ss that load rules,
// each with its handler's index in ss.
func loadersOf(ss []Site) (loaders []*sites.Loader, owners []int) {
	for i, s := range ss {
		if s.Loader != nil {
			loaders = append(loaders, s.Loader)
			owners = append(owners, i)
		}
	}
	return loaders, owners
}

// serveReload answers POST /robots/reload[?withdraw_previous=true].
func (a *API) serveReload(w http.ResponseWriter, r *http.Request) error {
	withdraw := false
	if v := r.URL.Query().Get("withdraw_previous"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Error{http.StatusBadRequest, fmt.Errorf("robots: withdraw_previous=%q: want true or false", v)}
		}
		withdraw = b
	}
	if !withdraw {
		return WriteJSON(w, Reload(r.Context(), a.Sites()))
	}
	return WriteJSON(w, reloadWithdrawing(r.Context(), a.Sites(), adminClient(r)))
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

// Reload loads every site's robots.txt now: through the server for
// source site, from disk for source file; inline text has nothing to load.
// Sites shared by several handlers are loaded once.
func Reload(ctx context.Context, ss []Site) ReloadReport {
	loaders, owners := loadersOf(ss)
	return reloadReportOf(ss, owners, sites.Reload(ctx, loaders), false)
}

// reloadWithdrawing is Reload, then withdraws every replaced version of
// each site whose load succeeded: an emergency rule change (a new
// Disallow) applies at once to every crawler instead of after the grace
// window. who asked is logged with each withdrawal.
func reloadWithdrawing(ctx context.Context, ss []Site, who string) ReloadReport {
	loaders, owners := loadersOf(ss)
	return reloadReportOf(ss, owners, sites.ReloadWithdrawing(ctx, loaders, who), true)
}

// reloadReportOf is the answer for the reload results rs of the loaders of
// the handlers owners (indexes in ss).
func reloadReportOf(ss []Site, owners []int, rs []sites.ReloadResult, withdraw bool) ReloadReport {
	rep := ReloadReport{WithdrawPrevious: withdraw, Reloaded: []ReloadResult{}}
	for _, r := range rs {
		i := ownerOf(ss, r.Host, r.Server, owners[r.Loader])
		res := ReloadResult{
			Handler: i, SiteBlock: siteBlockOf(ss[i], i), Source: ss[i].Source, Host: r.Host, Server: r.Server, File: r.File,
			Result: r.Result, Error: r.Error, Previous: r.Previous, Version: r.Version, Changed: r.Version != r.Previous,
		}
		if u := r.Unconfirmed; u != nil {
			res.PendingChange = &PendingChange{What: u.What, Since: u.Since.UTC(), ConfirmAt: u.ConfirmAt.UTC()}
		}
		for _, wd := range r.Withdrawn {
			res.Withdrawn = append(res.Withdrawn, WithdrawnVersion{Version: wd.Version, From: wd.From.UTC(), Until: wd.Until.UTC()})
		}
		res.NotWithdrawn = r.NotWithdrawn
		rep.Reloaded = append(rep.Reloaded, res)
	}
	return rep
}

// WithdrawReport is the answer of DELETE /robots/versions/<id>.
type WithdrawReport struct {
	Version   string          `json:"version"`
	Withdrawn []WithdrawnSite `json:"withdrawn"`
}

// WithdrawnSite is one site a version was withdrawn from.
type WithdrawnSite struct {
	// Handler is the index of a handler serving the site; absent when
	// only the site's stored history held the version (StoredOnly).
	Handler *int `json:"handler,omitempty"`
	// SiteBlock names the site block of Handler.
	SiteBlock  string    `json:"site_block,omitempty"`
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
func (a *API) serveWithdraw(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimPrefix(r.URL.Path, "/robots/versions/")
	ss := a.Sites()
	loaders, owners := loadersOf(ss)
	done, err := sites.Withdraw(r.Context(), loaders, id, adminClient(r))
	var cur *sites.CurrentError
	switch {
	case errors.As(err, &cur):
		return Error{http.StatusConflict, fmt.Errorf("robots: %w", err)}
	case errors.Is(err, sites.ErrBadVersion):
		return Error{http.StatusBadRequest, fmt.Errorf("robots: %q: %w", id, err)}
	case errors.Is(err, sites.ErrUnknownVersion):
		return Error{http.StatusNotFound, fmt.Errorf("robots: version %s: %w (see /robots/status)", id, err)}
	case err != nil && len(done) == 0:
		return Error{http.StatusInternalServerError, fmt.Errorf("robots: withdrawing version %s: %w", id, err)}
	}
	rep := WithdrawReport{Version: id, Withdrawn: []WithdrawnSite{}}
	for _, d := range done {
		ws := WithdrawnSite{Host: d.Host, Server: d.Server, From: d.From.UTC(), Until: d.Until.UTC(), StoredOnly: d.Loader < 0}
		if d.Loader >= 0 {
			i := ownerOf(ss, d.Host, d.Server, owners[d.Loader])
			ws.Handler, ws.SiteBlock = &i, siteBlockOf(ss[i], i)
		}
		rep.Withdrawn = append(rep.Withdrawn, ws)
	}
	if err != nil {
		// Some sites were done before storage failed: say which, and why.
		return Error{http.StatusInternalServerError, fmt.Errorf("robots: withdrawing version %s: %w (withdrawn from %d sites)", id, err, len(rep.Withdrawn))}
	}
	return WriteJSON(w, rep)
}
