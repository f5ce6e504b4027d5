package caddyrobots

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
// (config_placement.go). A robots handler after a handler that always
// answers (it never runs), use_error_routes on a server without
// handle_errors (bots get an empty 403) and exempt loopback or private
// networks on a server that trusts no proxy are warned about once the
// configuration has started: each handler walks its server's routes,
// naming the site block; the warnings also show in GET /robots/status.
// Mistakes that the directive's own tokens show (robots_txt with source
// site, placeholders in inline text) are errors with the file and line
// when the Caddyfile is adapted.

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
	dropDecoded(a) // config_placement.go: the config has loaded
	for _, w := range s.h.placementWarnings(a) {
		s.h.warnConfig(w)
	}
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
