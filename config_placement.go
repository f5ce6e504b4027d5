package caddyrobots

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

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

// loadPath is one robots handler's way through a server's routes, as seen
// while the config loads.
type loadPath struct {
	server string
	listen []string
	hosts  []string
	// conds are the matcher sets of the routes that lead to the handler
	// (as JSON, outermost first); groups the route groups on its way.
	conds  []string
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

// rawDecoded keeps, for the config that is loading, the handlers decoded
// from JSON by an earlier walk, by the first byte of their JSON (which
// Caddy keeps until it loads the handler): each handler of a large config
// is decoded once, not once per robots handler.
type rawDecoded struct {
	mu sync.Mutex
	m  map[*byte]*rawHandler
}

func (c *rawDecoded) decode(raw json.RawMessage) *rawHandler {
	if len(raw) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
	ctx.OnCancel(func() {
		decodedPools.Lock()
		delete(decodedPools.m, app)
		decodedPools.Unlock()
	})
	return c
}

// dropDecoded forgets the handlers decoded for app: it has loaded.
func dropDecoded(app *caddyhttp.App) {
	decodedPools.Lock()
	delete(decodedPools.m, app)
	decodedPools.Unlock()
}

// loadPaths lists every robots handler of app, loaded or not, by server
// (in name order) and in route order; dec decodes the handlers still in
// JSON.
func loadPaths(app *caddyhttp.App, dec *rawDecoded) []loadPath {
	var out []loadPath
	var walk func(routes caddyhttp.RouteList, p loadPath)
	into := func(routes caddyhttp.RouteList, errs *caddyhttp.HTTPErrorConfig, p loadPath) {
		walk(routes, p)
		if errs != nil {
			p.errorRoutes = true
			walk(errs.Routes, p)
		}
	}
	walk = func(routes caddyhttp.RouteList, p loadPath) {
		for i := range routes {
			rt := &routes[i]
			q := p
			q.conds = append(slices.Clip(p.conds), routeConds(rt))
			q.hosts = append(slices.Clip(p.hosts), routeHosts(rt)...)
			if rt.Group != "" {
				q.groups = append(slices.Clip(p.groups), rt.Group)
			}
			if len(rt.Handlers) > 0 {
				for _, mh := range rt.Handlers {
					switch x := mh.(type) {
					case *Handler:
						out = append(out, q)
					case *caddyhttp.Subroute:
						into(x.Routes, x.Errors, q)
					}
				}
				continue
			}
			for _, raw := range rt.HandlersRaw {
				hd := dec.decode(raw)
				if hd == nil {
					continue
				}
				switch hd.Handler {
				case "robots":
					out = append(out, q)
				case "subroute":
					into(hd.Routes, hd.Errors, q)
				}
			}
		}
	}
	names := make([]string, 0, len(app.Servers))
	for name := range app.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		srv := app.Servers[name]
		if srv == nil {
			continue
		}
		into(srv.Routes, srv.Errors, loadPath{server: name, listen: srv.Listen})
	}
	return out
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
// nothing.
func checkPlacement(ctx caddy.Context) error {
	app, _ := appOf(ctx, "http")
	a, ok := app.(*caddyhttp.App)
	if !ok || a == nil {
		return nil
	}
	paths := loadPaths(a, decodedFor(ctx, a))
	for i, p := range paths {
		site := siteDesc(placement{Listen: p.listen, Hosts: p.hosts})
		if p.errorRoutes {
			return fmt.Errorf("robots: site %s has the robots directive inside handle_errors: it would judge the error pages of every request, so a bot's 404 would become a 403 or a 503. Put robots in the site block itself (use_error_routes sends its refusals to handle_errors)", site)
		}
		for _, o := range paths[:i] {
			if o.server == p.server && !o.errorRoutes && slices.Equal(conditions(o.conds), conditions(p.conds)) && !exclusive(o.groups, p.groups) {
				return fmt.Errorf("robots: site %s has two robots handlers that run for the same requests: both would judge and count every bot, and the stricter would answer. Keep one robots directive per site (or give them different matchers or handle blocks)", site)
			}
		}
	}
	return nil
}

// conditions are the matcher sets on a way through the routes without the
// routes that have none: `route { robots }` runs for the same requests as
// a bare `robots` beside it.
func conditions(conds []string) []string {
	return slices.DeleteFunc(slices.Clone(conds), func(c string) bool { return c == "" })
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
