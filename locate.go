package caddyrobots

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

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
		if !listensOn(srv, port) {
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

// listensOn reports whether srv listens on port.
func listensOn(srv *caddyhttp.Server, port int) bool {
	for _, l := range srv.Listen {
		na, err := caddy.ParseNetworkAddress(l)
		if err != nil {
			continue
		}
		if uint(port) >= na.StartPort && uint(port) <= na.EndPort {
			return true
		}
	}
	return false
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
