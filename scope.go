package caddyrobots

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// A ban belongs to the site block that issued it: the handler the operator
// wrote. It holds whatever Host the client sends next (a catch-all site's
// bot cannot escape its ban by changing the Host header), and it never
// reaches another site block. A site block with host names is named by
// them (the host patterns of the routes that lead to the handler), so that
// instances sharing a Redis share its bans whatever port each listens on,
// and the same site served on two servers (http and https) is one scope; a
// catch-all site block, which has no names, is named by its server's
// listen addresses. Either way the scope survives config reloads that keep
// the site block.

// handlerScope names a handler's site block.
type handlerScope struct {
	// key is the state's Site for strikes and bans: a short hash, so that a
	// site block with many host names keeps a short key; logKey is the
	// same for mode log, whose state is kept apart.
	key, logKey string
	// desc names the site block for people: "a.example, b.example on :443";
	// site is its host patterns ("*" for a catch-all) and listen its
	// server's addresses.
	desc, site, listen string
	// stats are the site block's decision counts, kept across config
	// reloads that keep the site block; nil for noScope.
	stats *crawlerStats
}

// siteDesc names a placement's site block for people: "a.example,
// b.example on :443", "* on :8080" for a catch-all.
func siteDesc(p placement) string {
	hosts := slices.Clone(p.Hosts)
	slices.Sort(hosts)
	listen := slices.Clone(p.Listen)
	slices.Sort(listen)
	site := "*"
	if len(hosts) > 0 {
		site = strings.Join(hosts, ", ")
	}
	return site + " on " + strings.Join(listen, " ")
}

// scopeOf describes a placement.
func scopeOf(p placement) *handlerScope {
	hosts := slices.Clone(p.Hosts)
	slices.Sort(hosts)
	listen := slices.Clone(p.Listen)
	slices.Sort(listen)
	site := "*"
	if len(hosts) > 0 {
		site = strings.Join(hosts, ", ")
	}
	desc := siteDesc(p)
	listenText := strings.Join(listen, " ")
	name := "hosts:" + strings.Join(hosts, ",")
	if len(hosts) == 0 {
		name = "listen:" + strings.Join(listen, ",")
	}
	sum := sha256.Sum256([]byte(name))
	key := "h:" + hex.EncodeToString(sum[:6])
	return &handlerScope{key: key, logKey: "log|" + key, desc: desc, site: site, listen: listenText, stats: scopeStats.get(key)}
}

// noScope is the scope outside a Caddy server (unit tests, a handler not
// found in its server's routes): one scope for the handler.
var noScope = &handlerScope{logKey: "log|", desc: "this handler"}

// statsFor returns the counts of the site block serving r: its scope's,
// which outlive a config reload, or the handler's own when it has no
// scope.
func (h *Handler) statsFor(r *http.Request) *crawlerStats {
	if s := h.scopeFor(r).stats; s != nil {
		return s
	}
	return h.stats
}

// statsNow returns the counts the admin API reports for h: its scope's
// once a request found it, else its own.
func (h *Handler) statsNow() *crawlerStats {
	if s := h.scope.Load(); s != nil && s.stats != nil {
		return s.stats
	}
	return h.stats
}

// scopeFor returns the handler's scope, found once from the server serving
// r: the walk over its routes costs the first request only.
func (h *Handler) scopeFor(r *http.Request) *handlerScope {
	if s := h.scope.Load(); s != nil {
		return s
	}
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	s := h.scopeIn(srv)
	if srv == nil {
		return s // no server yet to learn from: do not keep the guess
	}
	h.scope.CompareAndSwap(nil, s)
	return h.scope.Load()
}

// scopeIn finds the handler in srv's routes.
func (h *Handler) scopeIn(srv *caddyhttp.Server) *handlerScope {
	if srv == nil {
		return noScope
	}
	var found *placement
	var walk func(routes caddyhttp.RouteList, hosts []string)
	walk = func(routes caddyhttp.RouteList, hosts []string) {
		for _, rt := range routes {
			hs := append(slices.Clip(hosts), hostPatterns(rt.MatcherSets)...)
			for _, mh := range rt.Handlers {
				if found != nil {
					return
				}
				switch x := mh.(type) {
				case *Handler:
					if x == h {
						found = &placement{Listen: srv.Listen, Hosts: hs}
					}
				case *caddyhttp.Subroute:
					walk(x.Routes, hs)
				}
			}
		}
	}
	walk(srv.Routes, nil)
	if found == nil {
		return &handlerScope{logKey: "log|", desc: "this handler on " + strings.Join(srv.Listen, " ")}
	}
	return scopeOf(*found)
}

// rotationTable recognises addresses that rotate names, for every handler
// of the process (keyed by their scopes) and across config reloads.
var rotationTable = state.NewRotations(0)

// scopeStats keeps each site block's counts across config reloads, for
// the status report: a reload that keeps the site block keeps its top
// crawlers. It holds at most scopeStatsKept site blocks beyond those of
// the running handlers: when a config with new site blocks pushes it past
// that, the counts of site blocks no running handler serves are dropped.
var scopeStats = &statsByScope{m: map[string]*crawlerStats{}}

const scopeStatsKept = 64

type statsByScope struct {
	mu sync.Mutex
	m  map[string]*crawlerStats
}

// get returns the counts of the scope key, creating them on first use.
func (t *statsByScope) get(key string) *crawlerStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok {
		return s
	}
	if len(t.m) >= scopeStatsKept {
		live := map[string]bool{}
		for _, h := range handlers() {
			if s := h.scope.Load(); s != nil {
				live[s.key] = true
			}
		}
		for k := range t.m {
			if !live[k] {
				delete(t.m, k)
			}
		}
	}
	s := newCrawlerStats()
	t.m[key] = s
	return s
}
