package caddyrobots

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/fileserver"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"
)

// Configs that cannot silently fail. Some mistakes are visible only where
// the handler sits in the whole configuration, which a Caddyfile directive
// cannot see (Caddy's directive API shows a directive its own tokens, not
// its siblings). Two robots handlers that run for the same requests, and a
// robots handler in handle_errors, fail the config when it loads
// (loadPath and the walk below). A robots handler after a handler that always
// answers (it never runs), use_error_routes on a server without
// handle_errors (bots get an empty 403) and exempt loopback or private
// networks on a server that trusts no proxy are warned about once the
// configuration has started: each handler walks its server's routes,
// naming the site block; the warnings also show in GET /robots/status.
// Mistakes that the directive's own tokens show (robots_txt with source
// site, placeholders in inline text) are errors with the file and line
// when the Caddyfile is adapted (caddyfile.go).

// Placement mistakes that fail the config when it loads (caddy validate,
// caddy run, a reload): a robots handler in error routes (handle_errors),
// and two robots handlers that run for the same requests of a site.
//
// A handler is provisioned while Caddy provisions the http app, which is
// already known to the config then (Caddy keeps an app before provisioning
// it, so that its modules can reach it). Its routes are partly provisioned:
// a route whose handlers are loaded holds them (Route.Handlers), the
// others still hold their JSON (Route.HandlersRaw). The walk below reads
// both forms, so each handler sees every robots handler of the app.
// Matchers of the routes on the way to a handler being provisioned are
// always loaded (Caddy loads a route list's matchers before its handlers),
// so two handlers under the same conditions compare equal when the second
// of them is provisioned.

// loadPath is one robots handler's way through routes, as seen while the
// config loads: relative to a route list.
type loadPath struct {
	hosts []string
	// key is the matcher sets of the routes that lead to the handler (as
	// JSON, outermost first, routes without matchers left out); groups
	// the route groups on its way.
	key    string
	groups []string
	// errorRoutes: the handler runs for errors (handle_errors), not for
	// requests.
	errorRoutes bool
}

// rawHandler is what the walk reads of a handler still in JSON.
type rawHandler struct {
	Handler string                     `json:"handler"`
	Routes  caddyhttp.RouteList        `json:"routes"`
	Errors  *caddyhttp.HTTPErrorConfig `json:"errors"`
}

// rawDecoded keeps, for the config that is loading, what earlier walks
// worked out, so that each robots handler's walk costs little more than
// visiting the routes: the handlers decoded from JSON, by the first byte
// of their JSON (which Caddy keeps until it loads the handler), and the
// conditions and hosts of each route's matchers, by their first matcher
// set (loaded or JSON; once loaded, a route's matchers stay loaded).
type rawDecoded struct {
	mu     sync.Mutex
	m      map[*byte]*rawHandler
	routes map[any]routeInfo
	// subs are the robots handlers inside each subroute that will not
	// change any more: one loaded (its handlers are all loaded) or one
	// decoded here from JSON.
	subs map[any][]loadPath
}

// routeInfo is what a walk reads of a route's matchers.
type routeInfo struct {
	conds string
	hosts []string
}

// route returns the conditions and hosts of rt's matchers.
func (c *rawDecoded) route(rt *caddyhttp.Route) routeInfo {
	var key any
	switch {
	case len(rt.MatcherSets) > 0:
		key = &rt.MatcherSets[0]
	case len(rt.MatcherSetsRaw) > 0:
		key = &rt.MatcherSetsRaw[0]
	default:
		return routeInfo{} // no matchers: every request
	}
	if ri, ok := c.routes[key]; ok {
		return ri
	}
	ri := routeInfo{conds: routeConds(rt), hosts: routeHosts(rt)}
	if c.routes == nil {
		c.routes = map[any]routeInfo{}
	}
	c.routes[key] = ri
	return ri
}

// decode returns the handler raw holds, nil if it is not JSON.
func (c *rawDecoded) decode(raw json.RawMessage) *rawHandler {
	if len(raw) == 0 {
		return nil
	}
	if hd, ok := c.m[&raw[0]]; ok {
		return hd
	}
	hd := new(rawHandler)
	if json.Unmarshal(raw, hd) != nil {
		hd = nil // Caddy reports it when it loads the handler
	}
	if c.m == nil {
		c.m = map[*byte]*rawHandler{}
	}
	c.m[&raw[0]] = hd
	return hd
}

// decodedPools holds a rawDecoded per loading http app, dropped when the
// config's context ends.
var decodedPools = struct {
	sync.Mutex
	m map[*caddyhttp.App]*rawDecoded
}{m: map[*caddyhttp.App]*rawDecoded{}}

// decodedFor returns the rawDecoded of app.
func decodedFor(ctx caddy.Context, app *caddyhttp.App) *rawDecoded {
	decodedPools.Lock()
	defer decodedPools.Unlock()
	if c, ok := decodedPools.m[app]; ok {
		return c
	}
	c := new(rawDecoded)
	decodedPools.m[app] = c
	ctx.OnCancel(func() { dropDecoded(app) })
	return c
}

// dropDecoded forgets the handlers decoded for app: it has loaded.
func dropDecoded(app *caddyhttp.App) {
	decodedPools.Lock()
	defer decodedPools.Unlock()
	delete(decodedPools.m, app)
}

// lists returns the robots handlers in routes and in the error routes of
// errs, with their ways relative to them.
func (c *rawDecoded) lists(routes caddyhttp.RouteList, errs *caddyhttp.HTTPErrorConfig) []loadPath {
	out := c.walk(routes)
	if errs != nil {
		for _, p := range c.walk(errs.Routes) {
			p.errorRoutes = true
			out = append(out, p)
		}
	}
	return out
}

// walk returns the robots handlers in routes, with their ways relative to
// routes.
func (c *rawDecoded) walk(routes caddyhttp.RouteList) []loadPath {
	var out []loadPath
	for i := range routes {
		rt := &routes[i]
		inner := c.handlers(rt)
		if len(inner) == 0 {
			continue
		}
		ri := c.route(rt)
		for _, p := range inner {
			out = append(out, p.under(rt, ri))
		}
	}
	return out
}

// handlers returns the robots handlers among rt's handlers and inside
// them, with their ways relative to rt's handlers.
func (c *rawDecoded) handlers(rt *caddyhttp.Route) []loadPath {
	var inner []loadPath
	if len(rt.Handlers) > 0 {
		for _, mh := range rt.Handlers {
			switch x := mh.(type) {
			case *Handler:
				inner = append(inner, loadPath{})
			case *caddyhttp.Subroute:
				inner = append(inner, c.sub(x, x.Routes, x.Errors)...)
			}
		}
		return inner
	}
	for _, raw := range rt.HandlersRaw {
		hd := c.decode(raw)
		switch {
		case hd == nil:
		case hd.Handler == "robots":
			inner = append(inner, loadPath{})
		case hd.Handler == "subroute":
			inner = append(inner, c.sub(hd, hd.Routes, hd.Errors)...)
		}
	}
	return inner
}

// under returns p seen from above rt, whose matchers are ri.
func (p loadPath) under(rt *caddyhttp.Route, ri routeInfo) loadPath {
	p.key = joinConds(ri.conds, p.key)
	if len(ri.hosts) > 0 {
		p.hosts = append(slices.Clip(ri.hosts), p.hosts...)
	}
	if rt.Group != "" {
		p.groups = append([]string{rt.Group}, p.groups...)
	}
	return p
}

// joinConds joins the conditions of an outer and an inner way: a route
// without matchers adds none, so `route { robots }` runs for the same
// requests as a bare `robots` beside it.
func joinConds(outer, inner string) string {
	switch {
	case outer == "":
		return inner
	case inner == "":
		return outer
	}
	return outer + "\x00" + inner
}

// sub returns the robots handlers of a subroute that no longer changes
// (key: the loaded *Subroute or the decoded *rawHandler), once.
func (c *rawDecoded) sub(key any, routes caddyhttp.RouteList, errs *caddyhttp.HTTPErrorConfig) []loadPath {
	if ps, ok := c.subs[key]; ok {
		return ps
	}
	ps := c.lists(routes, errs)
	if c.subs == nil {
		c.subs = map[any][]loadPath{}
	}
	c.subs[key] = ps
	return ps
}

// routeConds is a route's matcher sets as JSON: loaded ones as the
// placement warnings compare them, JSON ones marked apart (they are
// compared only with each other).
func routeConds(rt *caddyhttp.Route) string {
	if len(rt.MatcherSets) > 0 {
		return matcherJSON(rt.MatcherSets)
	}
	if len(rt.MatcherSetsRaw) > 0 {
		b, err := json.Marshal(rt.MatcherSetsRaw)
		if err != nil {
			return fmt.Sprintf("raw:%p", rt)
		}
		return "raw:" + string(b)
	}
	return ""
}

// routeHosts are the host patterns of a route's matchers, loaded or not;
// nil when a set matches any host.
func routeHosts(rt *caddyhttp.Route) []string {
	if len(rt.MatcherSets) > 0 {
		return hostPatterns(rt.MatcherSets)
	}
	var out []string
	for _, set := range rt.MatcherSetsRaw {
		raw, ok := set["host"]
		if !ok {
			return nil
		}
		var hosts []string
		if json.Unmarshal(raw, &hosts) != nil {
			return nil
		}
		out = append(out, hosts...)
	}
	return out
}

// checkPlacement fails the config for a robots handler in error routes or
// two robots handlers that run for the same requests of a site, anywhere
// in the http app that is loading. Outside a config (unit tests) it checks
// nothing. The servers' own route lists are loading, so they are walked
// each time; what is inside their routes is worked out once (rawDecoded).
func checkPlacement(ctx caddy.Context) error {
	app, _ := appOf(ctx, "http")
	a, ok := app.(*caddyhttp.App)
	if !ok || a == nil {
		return nil
	}
	dec := decodedFor(ctx, a)
	dec.mu.Lock()
	defer dec.mu.Unlock()
	names := make([]string, 0, len(a.Servers))
	for name := range a.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		srv := a.Servers[name]
		if srv == nil {
			continue
		}
		// The handlers seen so far under each set of conditions, with the
		// groups on their way.
		seen := make(map[string][][]string, len(srv.Routes))
		site := func(p loadPath) string { return siteDesc(placement{Listen: srv.Listen, Hosts: p.hosts}) }
		for _, p := range dec.lists(srv.Routes, srv.Errors) {
			if p.errorRoutes {
				return fmt.Errorf("robots: site %s has the robots directive inside handle_errors: it would judge the error pages of every request, so a bot's 404 would become a 403 or a 503. Put robots in the site block itself (use_error_routes sends its refusals to handle_errors)", site(p))
			}
			for _, groups := range seen[p.key] {
				if !exclusive(groups, p.groups) {
					return fmt.Errorf("robots: site %s has two robots handlers that run for the same requests: both would judge and count every bot, and the stricter would answer. Keep one robots directive per site (or give them different matchers or handle blocks)", site(p))
				}
			}
			seen[p.key] = append(seen[p.key], p.groups)
		}
	}
	return nil
}

// proxyRanges are where a proxy or load balancer in front of Caddy
// usually is: loopback and private networks.
var proxyRanges = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
}

// exemptsProxyRanges returns the exempt networks that overlap loopback or
// private networks.
func exemptsProxyRanges(list []netip.Prefix) []string {
	var out []string
	for _, p := range list {
		for _, r := range proxyRanges {
			if p.Overlaps(r) {
				out = append(out, p.String())
				break
			}
		}
	}
	return out
}

// Warnings once the configuration has started.

// watchStart checks the handler's place in the configuration once it has
// started, through Caddy's events app (which this also loads, so the
// handler can emit its own events).
func (h *Handler) watchStart(ctx caddy.Context) error {
	app, err := appOf(ctx, "events")
	if err != nil {
		return fmt.Errorf("robots: loading the events app: %w", err)
	}
	ev, ok := app.(*caddyevents.App)
	if !ok {
		return nil
	}
	h.events, h.eventsCtx = ev, ctx
	if err := ev.On("started", startedCheck{h: h, ctx: ctx}); err != nil {
		return fmt.Errorf("robots: watching the config start: %w", err)
	}
	return nil
}

// appOf loads a Caddy app, or returns nil outside a config (ctx.App
// panics on a context without one, as in unit tests).
func appOf(ctx caddy.Context, name string) (app any, err error) {
	defer func() {
		if recover() != nil {
			app, err = nil, nil
		}
	}()
	return ctx.App(name)
}

// startedCheck runs the placement checks when the config has started.
type startedCheck struct {
	h   *Handler
	ctx caddy.Context
}

// Handle implements caddyevents.Handler.
func (s startedCheck) Handle(context.Context, caddy.Event) error {
	app, err := appOf(s.ctx, "http")
	if err != nil {
		return nil
	}
	a, ok := app.(*caddyhttp.App)
	if !ok {
		return nil
	}
	dropDecoded(a) // the config has loaded
	for _, w := range s.h.placementWarnings(a) {
		s.h.warnConfig(w)
	}
	s.h.seriesAtStart(a) // metrics.go
	return nil
}

// robotsPath is one robots handler's way through a server's routes: the
// matcher sets of the routes that lead to it (as JSON, outermost first),
// the groups it sits in, and the handlers that run before it in its own
// route.
type robotsPath struct {
	h      *Handler
	server string
	listen []string
	hosts  []string
	conds  []string
	groups []string
	before []caddyhttp.MiddlewareHandler
	// shadow is a route before it in a list on its way that answers every
	// request it sees (no matchers, a handler that always answers): the
	// handler never runs.
	shadow string
}

// robotsPaths lists every robots handler of app with its way through the
// routes.
func robotsPaths(app *caddyhttp.App) []robotsPath {
	var out []robotsPath
	for name, srv := range app.Servers {
		var walk func(routes caddyhttp.RouteList, p robotsPath)
		walk = func(routes caddyhttp.RouteList, p robotsPath) {
			shadow := p.shadow
			for _, rt := range routes {
				q := p
				q.conds = append(slices.Clip(p.conds), matcherJSON(rt.MatcherSets))
				q.hosts = append(slices.Clip(p.hosts), hostPatterns(rt.MatcherSets)...)
				if rt.Group != "" {
					q.groups = append(slices.Clip(p.groups), rt.Group)
				}
				q.shadow = shadow
				for i, mh := range rt.Handlers {
					switch x := mh.(type) {
					case *Handler:
						r := q
						r.h, r.before = x, rt.Handlers[:i]
						out = append(out, r)
					case *caddyhttp.Subroute:
						walk(x.Routes, q)
					}
				}
				if shadow == "" && len(rt.MatcherSets) == 0 {
					for _, mh := range rt.Handlers {
						if name := answersAlways(mh); name != "" {
							shadow = name
						}
					}
					if rt.Terminal && shadow == "" {
						shadow = "a terminal route"
					}
				}
			}
		}
		walk(srv.Routes, robotsPath{server: name, listen: srv.Listen})
	}
	return out
}

// matcherJSON is a route's matcher sets as JSON, to compare conditions.
func matcherJSON(sets caddyhttp.MatcherSets) string {
	if len(sets) == 0 {
		return ""
	}
	b, err := json.Marshal(sets)
	if err != nil {
		return fmt.Sprintf("%p", sets)
	}
	return string(b)
}

// answersAlways names a handler that answers every request it gets, so
// that nothing after it runs: respond, redir, error, abort, file_server
// (unless pass_thru), reverse_proxy and php_fastcgi; "" for others.
func answersAlways(mh caddyhttp.MiddlewareHandler) string {
	switch x := mh.(type) {
	case caddyhttp.StaticResponse, *caddyhttp.StaticResponse:
		return "respond"
	case caddyhttp.StaticError, *caddyhttp.StaticError:
		return "error"
	case *fileserver.FileServer:
		if !x.PassThru {
			return "file_server"
		}
	case *reverseproxy.Handler:
		return "reverse_proxy"
	}
	return ""
}

// placementWarnings are the warnings about where h sits in app.
func (h *Handler) placementWarnings(app *caddyhttp.App) []string {
	paths := robotsPaths(app)
	i := slices.IndexFunc(paths, func(p robotsPath) bool { return p.h == h })
	if i < 0 {
		return nil
	}
	me := paths[i]
	site := scopeOf(placement{Listen: me.listen, Hosts: me.hosts}).desc
	var ws []string
	// Two handlers for the same requests, and a handler in handle_errors,
	// fail the config when it loads (checkPlacement).
	for _, mh := range me.before {
		if name := answersAlways(mh); name != "" {
			ws = append(ws, "robots: in site "+site+", the robots handler comes after "+name+" in the same route, which answers every request: it never runs. Put robots first (or use the directive outside the route)")
			break
		}
	}
	if me.shadow != "" {
		ws = append(ws, "robots: in site "+site+", a route before the robots handler ends every request with "+me.shadow+": the handler never runs")
	}
	if srv := app.Servers[me.server]; serverTrustsProxies(srv) && srv.TrustedProxiesStrict == 0 {
		ws = append(ws, "robots: site "+site+" is served by a server that trusts proxies without trusted_proxies_strict: the client address is the leftmost X-Forwarded-For entry, which a client can choose, so a bot could claim a verified crawler's address. Add trusted_proxies_strict to the servers options")
	}
	if srv := app.Servers[me.server]; !serverTrustsProxies(srv) {
		if nets := exemptsProxyRanges(h.exempt); len(nets) > 0 {
			ws = append(ws, "robots: site "+site+" exempts "+strings.Join(nets, ", ")+", loopback or private addresses, and its server trusts no proxy: if a proxy or load balancer there forwards requests to Caddy, every client behind it has its address and is exempt. Set trusted_proxies (and trusted_proxies_strict) in the servers options so that clients keep their own addresses; the handler also warns when an exempt address sends X-Forwarded-For")
		}
	}
	if w := h.fingerprintWarning(app.Servers[me.server], site); w != "" { // fingerprint.go
		ws = append(ws, w)
	}
	if h.UseErrorRoutes {
		if srv := app.Servers[me.server]; srv != nil && (srv.Errors == nil || len(srv.Errors.Routes) == 0) {
			ws = append(ws, "robots: use_error_routes in site "+site+", but its server has no handle_errors: refused bots get an empty 403 and throttled ones an empty 503. Add handle_errors, or remove use_error_routes to have the handler explain its refusals")
		}
	}
	return ws
}

// exclusive reports whether two ways through the routes part at routes of
// one group (Caddy runs only the first matching route of a group).
func exclusive(a, b []string) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

// inlinePlaceholder returns the first {env.*} or {$...} placeholder in an
// inline robots.txt: inline text is served and enforced as written, so such
// a placeholder would reach crawlers literally.
func inlinePlaceholder(text string) string {
	for _, lead := range []string{"{env.", "{$"} {
		if i := strings.Index(text, lead); i >= 0 {
			end := strings.IndexByte(text[i:], '}')
			if end < 0 {
				end = min(len(text)-i, 24)
			} else {
				end++
			}
			return text[i : i+end]
		}
	}
	return ""
}

// warnConfig logs a load-time warning about the config and keeps it for
// GET /robots/status.
func (h *Handler) warnConfig(msg string, fields ...zap.Field) {
	h.logger.Warn(msg, fields...)
	h.configWarnings.add(msg)
}

// warnings are a handler's warnings about its config: those found when it
// loads (list), and those about the state of a site (keyed: set while the
// site is wrong, cleared once it is right, such as a trap its robots.txt
// does not disallow).
type warnings struct {
	mu    sync.Mutex
	list  []string
	keyed map[string]string
}

// maxKeyedWarnings bounds the keyed warnings (one per site at most).
const maxKeyedWarnings = 64

func (w *warnings) add(msg string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, msg)
}

// set keeps msg under key, replacing the key's earlier warning; past
// maxKeyedWarnings keys a new key is dropped.
func (w *warnings) set(key, msg string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.keyed[key]; !ok && len(w.keyed) >= maxKeyedWarnings {
		return
	}
	if w.keyed == nil {
		w.keyed = map[string]string{}
	}
	w.keyed[key] = msg
}

// clear drops the warning under key.
func (w *warnings) clear(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keyed, key)
}

// all returns the warnings: the load-time ones, then the keyed ones in
// the order of their keys.
func (w *warnings) all() []string {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.list)
	for _, k := range slices.Sorted(maps.Keys(w.keyed)) {
		out = append(out, w.keyed[k])
	}
	return out
}

// Interface guards.
var _ caddyevents.Handler = startedCheck{}
