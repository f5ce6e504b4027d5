package caddyrobots

// POST /robots/reload: load every site's robots.txt now.

import (
	"context"

	"github.com/caddyrobots/caddy-robots/internal/sites"
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

// reloadAll loads every site's robots.txt now: through the server for
// source site, from disk for source file; inline text has nothing to load.
// Sites shared by several handlers are loaded once.
func reloadAll(ctx context.Context, hs []*Handler) reloadReport {
	var loaders []*sites.Loader
	var owners []*Handler
	for _, h := range hs {
		if h.rules != nil {
			loaders = append(loaders, h.rules.Loader)
			owners = append(owners, h)
		}
	}
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
