package caddyrobots

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/cli"
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

// siteOf returns a placement's hosts and listen addresses, sorted, and
// its site: the hosts joined, "*" for a catch-all.
func siteOf(p placement) (hosts, listen []string, site string) {
	hosts = slices.Clone(p.Hosts)
	slices.Sort(hosts)
	listen = slices.Clone(p.Listen)
	slices.Sort(listen)
	site = "*"
	if len(hosts) > 0 {
		site = strings.Join(hosts, ", ")
	}
	return hosts, listen, site
}

// siteDesc names a placement's site block for people: "a.example,
// b.example on :443", "* on :8080" for a catch-all.
func siteDesc(p placement) string {
	_, listen, site := siteOf(p)
	return site + " on " + strings.Join(listen, " ")
}

// scopeOf describes a placement.
func scopeOf(p placement) *handlerScope {
	hosts, listen, site := siteOf(p)
	listenText := strings.Join(listen, " ")
	desc := site + " on " + listenText
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

// Where a robots handler sits in the running configuration: the server
// (listen addresses) and the site (the host matchers of the routes that
// lead to it). The admin API's check uses it to find the handler a URL
// reaches, exactly as the server routes the request.

// placement is where a handler sits.
type placement struct {
	// Server is the server's name in the config ("srv0"); Listen its
	// addresses.
	Server string   `json:"server"`
	Listen []string `json:"listen"`
	// Hosts are the host patterns of the routes that lead to the handler,
	// outermost first; empty: every host (a catch-all site).
	Hosts []string `json:"hosts,omitempty"`
}

// site names the placement's site for people: its host patterns, or "*".
func (p placement) site() string {
	if len(p.Hosts) == 0 {
		return "*"
	}
	return strings.Join(p.Hosts, ", ")
}

// httpApp returns the running config's HTTP app, or nil.
func httpApp() *caddyhttp.App {
	ctx := caddy.ActiveContext()
	if ctx.Context == nil {
		return nil
	}
	app, err := ctx.AppIfConfigured("http")
	if err != nil {
		return nil
	}
	a, _ := app.(*caddyhttp.App)
	return a
}

// placements returns where every robots handler of app sits.
func placements(app *caddyhttp.App) map[*Handler]placement {
	out := map[*Handler]placement{}
	if app == nil {
		return out
	}
	for name, srv := range app.Servers {
		var walk func(routes caddyhttp.RouteList, hosts []string)
		walk = func(routes caddyhttp.RouteList, hosts []string) {
			for _, rt := range routes {
				hs := append(slices.Clip(hosts), hostPatterns(rt.MatcherSets)...)
				for _, mh := range rt.Handlers {
					switch x := mh.(type) {
					case *Handler:
						if _, seen := out[x]; !seen {
							out[x] = placement{Server: name, Listen: srv.Listen, Hosts: hs}
						}
					case *caddyhttp.Subroute:
						walk(x.Routes, hs)
					}
				}
			}
		}
		walk(srv.Routes, nil)
	}
	return out
}

// hostPatterns returns the host names a route's matcher sets name (the
// host matcher's values); nil when they do not restrict the host.
func hostPatterns(sets caddyhttp.MatcherSets) []string {
	var out []string
	for _, set := range sets {
		found := false
		for _, m := range set {
			switch mh := m.(type) {
			case caddyhttp.MatchHost:
				out, found = append(out, mh...), true
			case *caddyhttp.MatchHost:
				out, found = append(out, (*mh)...), true
			}
		}
		if !found {
			return nil // a set that matches any host: the route does too
		}
	}
	return out
}

// locate returns the robots handler that the server listening on r's port
// runs for r (a request prepared for that server), with its placement: the
// routes are walked in order as the server walks them, matchers evaluated
// on r, groups and terminal routes honoured. ok is false when no server
// listens there or no handler is reached.
func locate(app *caddyhttp.App, port int, r *http.Request) (*Handler, *caddyhttp.Server, placement, bool) {
	if app == nil {
		return nil, nil, placement{}, false
	}
	for name, srv := range app.Servers {
		if !cli.ListensOn(srv.Listen, port) {
			continue
		}
		rr := caddyhttp.PrepareRequest(r.Clone(r.Context()), caddy.NewReplacer(), nil, srv)
		if ip := clientIP(nil, r); ip.IsValid() {
			caddyhttp.SetVar(rr.Context(), caddyhttp.ClientIPVarKey, ip.String())
		}
		if h, hosts, ok := walkRoutes(srv.Routes, rr, nil); ok {
			return h, srv, placement{Server: name, Listen: srv.Listen, Hosts: hosts}, true
		}
	}
	return nil, nil, placement{}, false
}

// walkRoutes finds the first robots handler r reaches in routes.
func walkRoutes(routes caddyhttp.RouteList, r *http.Request, hosts []string) (*Handler, []string, bool) {
	groups := map[string]bool{}
	for _, rt := range routes {
		if rt.Group != "" && groups[rt.Group] {
			continue
		}
		if len(rt.MatcherSets) > 0 {
			match, err := rt.MatcherSets.AnyMatchWithError(r)
			if err != nil || !match {
				continue
			}
		}
		if rt.Group != "" {
			groups[rt.Group] = true
		}
		hs := append(slices.Clip(hosts), hostPatterns(rt.MatcherSets)...)
		for _, mh := range rt.Handlers {
			switch x := mh.(type) {
			case *Handler:
				return x, hs, true
			case *caddyhttp.Subroute:
				if h, got, ok := walkRoutes(x.Routes, r, hs); ok {
					return h, got, true
				}
			}
		}
		if rt.Terminal {
			break
		}
	}
	return nil, nil, false
}

// urlPort is the port of an http(s) URL's host: the one given, else the
// scheme's default.
func urlPort(scheme, hostport string) int {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return n
		}
	}
	if scheme == "https" {
		return 443
	}
	return 80
}

// registry lists the handlers of the running configurations, for the admin
// API and the status page. A handler joins at the end of Provision and
// leaves in Cleanup; during a reload both configurations' handlers are
// listed for a moment.
var registry struct {
	mu       sync.Mutex
	handlers []*Handler
}

func registerHandler(h *Handler) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.handlers = append(registry.handlers, h)
}

func unregisterHandler(h *Handler) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.handlers = slices.DeleteFunc(registry.handlers, func(x *Handler) bool { return x == h })
}

// handlers returns the registered handlers, oldest first.
func handlers() []*Handler {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return slices.Clone(registry.handlers)
}

// serverTrustsProxies reports whether srv trusts any proxy (the servers
// option trusted_proxies). Caddy loads that option into an unexported field
// and clears Server.TrustedProxiesRaw once it has, so by the time a request
// arrives the exported field is always empty; the loaded field is read
// with reflect, for its presence only. Should a later Caddy rename it, the
// answer is true: callers then ask Caddy about each request (its
// trusted_proxy variable, requestIsHTTPS), which is exact, only a little
// slower for people over plain HTTP.
func serverTrustsProxies(srv *caddyhttp.Server) bool {
	if srv == nil {
		return false
	}
	if len(srv.TrustedProxiesRaw) > 0 {
		return true // not provisioned yet
	}
	f := reflect.ValueOf(srv).Elem().FieldByName("trustedProxies")
	if !f.IsValid() || f.Kind() != reflect.Interface {
		return true
	}
	return !f.IsNil()
}

// Forwarding through a proxy the server does not trust. Behind a proxy,
// every client has the proxy's address unless the server's trusted_proxies
// names it; then address-level state would judge every client behind it as
// one address: one client rotating names would make the others share its
// pooled Crawl-delay budget. A peer on a private or loopback address that
// sends X-Forwarded-For or Forwarded while Caddy did not take the client's
// address from it is that mistake: the handler warns once (a
// config_warnings entry and a red line on the status page, with the peer)
// and, until it is fixed, applies no address-level state to that peer's
// requests: each name behind it keeps its own budget, strikes and bans. The
// cost, until the operator fixes it: a client there that rotates names is
// not pooled. A public peer's headers change nothing (it could be any
// client choosing them).

// untrustedProxyWarning is the config warning logged and listed once a
// handler meets a peer forwarding for others that the server does not
// trust.
const untrustedProxyWarning = "robots: requests arrive from %s with X-Forwarded-For or Forwarded, but the server does not trust it as a proxy: every client behind it has its address. Set trusted_proxies (and trusted_proxies_strict) in the servers options; until then, rotation (a pooled budget for an address's unproven names) is not applied to clients from that address"

// forwarding reports whether r is forwarded for others (it carries
// X-Forwarded-For or Forwarded) and, if it is, whether Caddy trusted its
// peer as a proxy (the trusted_proxy var; vars nil: look them up). The
// pipeline reads both (pipeline.Request): behind a proxy the server does
// not trust, rotation does not apply.
func forwarding(r *http.Request, vars map[string]any) (forwarded, trusted bool) {
	_, xff := r.Header["X-Forwarded-For"]
	_, fwd := r.Header["Forwarded"]
	if !xff && !fwd {
		return false, false
	}
	if vars == nil {
		vars, _ = r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	}
	trusted, _ = vars[caddyhttp.TrustedProxyVarKey].(bool)
	return true, trusted
}

// noteUntrustedProxy records peer as the handler's first untrusted proxy
// and warns about it once (log and config_warnings).
func (h *Handler) noteUntrustedProxy(peer netip.Addr) {
	if h.untrustedProxy == nil || h.untrustedProxy.Load() != nil {
		return
	}
	if h.untrustedProxy.CompareAndSwap(nil, &peer) {
		h.warnConfig(fmt.Sprintf(untrustedProxyWarning, peer), zap.String("peer", peer.String()))
	}
}

// untrustedProxyPeer is the first peer found forwarding for others while
// the server does not trust it; the zero Addr if none was.
func (h *Handler) untrustedProxyPeer() netip.Addr {
	if h.untrustedProxy == nil {
		return netip.Addr{}
	}
	if p := h.untrustedProxy.Load(); p != nil {
		return *p
	}
	return netip.Addr{}
}

// exemptProxyWarning is the config warning logged and listed once a
// handler meets an exempt address forwarding for others that the server
// does not trust as a proxy.
const exemptProxyWarning = "robots: exempt covers %s, which forwards requests for others (X-Forwarded-For or Forwarded) while the server does not trust it as a proxy: every client behind it has its address, so every bot behind it is exempt. Set trusted_proxies (and trusted_proxies_strict) in the servers options so that clients keep their own addresses, or remove that address from exempt"

// checkExemptProxy warns, once per handler, when an exempt client is a
// peer that forwards for others (X-Forwarded-For or Forwarded) while Caddy
// did not trust it as a proxy: the exemption then covers every client
// behind that proxy. Which address a proxy has is only known from the
// requests it forwards, so this is a run-time config warning (log,
// config_warnings and the status page), not a load error.
func (h *Handler) checkExemptProxy(r *http.Request, vars map[string]any, peer netip.Addr) {
	if h.exemptProxy == nil || h.exemptProxy.Load() != nil {
		return
	}
	if forwarded, trusted := forwarding(r, vars); !forwarded || trusted {
		return
	}
	if h.exemptProxy.CompareAndSwap(nil, &peer) {
		h.warnConfig(fmt.Sprintf(exemptProxyWarning, peer), zap.String("peer", peer.String()))
	}
}
