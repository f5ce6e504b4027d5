package caddyrobots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/admin"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI is the admin API of the robots handlers running in this Caddy.
// Module ID: admin.api.robots. It is registered with the plugin and needs
// no configuration; like every admin route it is served only where the
// admin endpoint listens (localhost:2019 by default) and obeys its Host and
// Origin checks:
//
//	GET    /robots/                 an HTML status page (a Lift button per ban)
//	GET    /robots/status           the same facts as JSON
//	POST   /robots/check            {"user_agent", "ip", "url"}: the decision a
//	                                request would get now, without counting it
//	GET    /robots/bans             the bans in force
//	DELETE /robots/bans/<identity>  lift one ban (identity path-escaped, as listed)
//	DELETE /robots/bans?address=<ip|cidr> | ?crawler=<name> | ?all=true
//	                                lift every ban of an address or network,
//	                                of a crawler, or all of them
//	POST   /robots/reload           load every site's robots.txt now
//	POST   /robots/reload?withdraw_previous=true
//	                                and then withdraw every replaced version of
//	                                each site that loaded: no grace, new rules
//	                                apply at once
//	DELETE /robots/versions/<id>    withdraw a replaced robots.txt version from
//	                                every site's grace window and stored history
//
// For example:
//
//	curl localhost:2019/robots/status
//	curl -X POST localhost:2019/robots/check \
//	  -d '{"user_agent":"GPTBot/1.2","ip":"203.0.113.7","url":"https://example.com/private/x"}'
//
// Browsers send Sec-Fetch-Mode without an Origin header when they open a
// page by its address, which the admin endpoint of Caddy 2.11 refuses with
// 403 ("required Origin header is missing or invalid"). To read the status
// page in a browser, proxy GET /robots/ (and nothing else) from a site only
// you can reach (behind basic_auth, or on a private address), without
// those headers:
//
//	@robotsStatus {
//		path /robots/
//		method GET
//	}
//	handle @robotsStatus {
//		reverse_proxy localhost:2019 {
//			header_up Host localhost:2019
//			header_up -Sec-Fetch-*
//			header_up -Origin
//		}
//	}
//
// The page's Lift buttons send DELETE /robots/bans/<identity> to the page's
// own origin: proxy that too, with its Origin, and list the status site
// among the admin endpoint's origins, so that Caddy checks it as it checks
// any browser's request (docs/operations.md, "Status page").
//
// The admin module is a separate instance from the handlers: it reads the
// handlers of the running configurations from a process-wide registry
// (scope.go) and describes each as an admin.Site for internal/admin, which
// serves every route; for /robots/check, checker finds the handler a
// request reaches and judges it as that handler would.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.robots",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// Routes returns the admin routes under /robots/.
func (a *adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/robots/", Handler: caddy.AdminHandlerFunc(a.serve)}}
}

// serve answers an admin request under /robots/; Caddy's admin server
// answers a caddy.APIError with its status, any other error with 500.
func (a *adminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	api := &admin.API{
		Sites:          func() []admin.Site { return adminSites(handlers()) },
		Checker:        checker{hs: handlers(), app: httpApp()},
		Lifted:         emitLifted,
		Logger:         caddy.Log().Named("admin.api.robots"),
		DefaultAddress: caddy.DefaultAdminListen,
	}
	err := api.Serve(w, r)
	return apiError(err)
}

// apiError turns an admin.Error into the caddy.APIError Caddy's admin
// server answers with its status; any other error is answered with 500.
func apiError(err error) error {
	var ae admin.Error
	if errors.As(err, &ae) {
		return caddy.APIError{HTTPStatus: ae.Status, Err: ae.Err}
	}
	return err
}

// checker finds the handler a POST /robots/check concerns among the
// running handlers hs, as the server app routes, and judges the request
// as that handler would now (judgeDry): reading the throttle and strike
// state without writing it. For source site, a host the handler has not
// loaded yet is loaded now, as a crawler's first visit would.
type checker struct {
	hs  []*Handler
	app *caddyhttp.App // nil outside a running Caddy
}

// Check judges r for the admin API.
func (c checker) Check(r *http.Request, u *url.URL, ip netip.Addr, index *int) (admin.Checked, error) {
	// The client's address, as Caddy's server records it: the route's
	// client_ip matchers and the handler read it.
	vars := map[string]any{caddyhttp.ClientIPVarKey: ip.String()}
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	h, ans, err := checkHandler(c.hs, c.app, index, u, r)
	if err != nil {
		return admin.Checked{}, err
	}
	if h.rules != nil && h.rules.srv.Load() == nil && h.Source == "site" {
		return admin.Checked{}, admin.Error{Status: http.StatusConflict,
			Err: errors.New("robots: check: the server this handler loads robots.txt through is not known (it is not in the running config's routes, and it served no request yet)")}
	}
	if srv := h.rules.srv.Load(); srv != nil {
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.ServerCtxKey, srv))
	}
	got := admin.Checked{Answer: ans, Mode: h.Mode}
	o, crawler, passed := h.judgeDry(r, ip)
	got.Crawler, got.Passed = crawler, passed
	if o != nil {
		got.Judgement = &o.Judgement
	}
	return got, nil
}

// checkHandler returns the handler a check concerns and says where it sits:
// the one given by index, else the one the server listening on the URL's
// port routes the request to. A check that reaches no handler is refused
// with the list of handlers.
func checkHandler(hs []*Handler, app *caddyhttp.App, index *int, u *url.URL, r *http.Request) (*Handler, admin.CheckAnswer, error) {
	if len(hs) == 0 {
		return nil, admin.CheckAnswer{}, admin.Error{Status: http.StatusNotFound, Err: errors.New("robots: no robots handler is running")}
	}
	places := placements(app)
	answer := func(i int, h *Handler) admin.CheckAnswer {
		p := places[h]
		return admin.CheckAnswer{Handler: i, Placement: admin.Placement(p), Site: p.site(), Source: h.Source}
	}
	if index != nil {
		if *index < 0 || *index >= len(hs) {
			return nil, admin.CheckAnswer{}, admin.Error{Status: http.StatusNotFound, Err: fmt.Errorf("robots: no handler %d (there are %d; see /robots/status)", *index, len(hs))}
		}
		return hs[*index], answer(*index, hs[*index]), nil
	}
	if app == nil && len(hs) == 1 {
		// Outside a running Caddy (no HTTP app to route through): the
		// only handler.
		return hs[0], answer(0, hs[0]), nil
	}
	if h, srv, p, ok := locate(app, urlPort(u.Scheme, u.Host), r); ok {
		for i, x := range hs {
			if x == h {
				if h.rules != nil {
					h.rules.learnServer(srv)
				}
				a := answer(i, h)
				a.Placement, a.Site = admin.Placement(p), p.site()
				return h, a, nil
			}
		}
	}
	var list []string
	for i, h := range hs {
		p, ok := places[h]
		if !ok {
			list = append(list, fmt.Sprintf("%d: not in the running config", i))
			continue
		}
		list = append(list, fmt.Sprintf("%d: server %s (%s), site %s", i, p.Server, strings.Join(p.Listen, " "), p.site()))
	}
	return nil, admin.CheckAnswer{}, admin.Error{Status: http.StatusNotFound, Err: fmt.Errorf(
		"robots: check: no robots handler runs for %s (no server listens on port %d, or its routes reach no robots handler for this request); handlers: %s; or pass \"handler\": <index>",
		u.Redacted(), urlPort(u.Scheme, u.Host), strings.Join(list, "; "))}
}

// adminSites describes hs for the admin API, in order, each named by its
// site block as the running config's routes place it (or, for a handler
// not in them, as its first request found it).
func adminSites(hs []*Handler) []admin.Site {
	places := placements(httpApp())
	out := make([]admin.Site, 0, len(hs))
	for _, h := range hs {
		s := h.adminSite()
		if p, ok := places[h]; ok {
			s.Block = &admin.Block{Name: siteDesc(p), Hosts: p.Hosts, Listen: strings.Join(p.Listen, " ")}
			if h.scope != nil && h.scope.Load() == nil {
				// No request yet (a reload just made it): its site
				// block's counts all the same, kept across the reload.
				scopeOf(p).stats.describe(&s, time.Now())
			}
		} else if s.Scope != nil {
			s.Block = &admin.Block{Name: h.scope.Load().desc, Hosts: hostList(s.Scope.Site), Listen: s.Scope.Listen}
		}
		out = append(out, s)
	}
	return out
}

// hostList splits a scope's host patterns ("*": a catch-all, none).
func hostList(site string) []string {
	if site == "*" || site == "" {
		return nil
	}
	return strings.Split(site, ", ")
}

// adminSite describes h for the admin API, as it is now.
func (h *Handler) adminSite() admin.Site {
	s := admin.Site{
		Source:         h.Source,
		File:           h.File,
		Mode:           h.Mode,
		Unavailable:    h.Unavailable,
		Grace:          h.grace,
		Strikes:        h.strikes,
		Store:          h.store,
		StoreType:      h.storeType(),
		Verifier:       h.verifier,
		ConfigWarnings: h.configWarnings.all(),
		UntrustedProxy: h.untrustedProxyPeer(),
	}
	if h.Verify != nil {
		s.Ranges = rangesSources(h.Verify)
	}
	if h.rules != nil {
		s.Loader = h.rules.Loader
	}
	if h.scope != nil {
		if sc := h.scope.Load(); sc != nil {
			s.Scope = &admin.Scope{Key: sc.key, Site: sc.site, Listen: sc.listen}
		}
	}
	h.statsNow().describe(&s, time.Now())
	return s
}

// storeType is the type of h's throttle and strike store: memory or redis.
func (h *Handler) storeType() string {
	if h.Store != nil && h.Store.Type != "" {
		return h.Store.Type
	}
	return "memory"
}

// stateStore is h's throttle, strike and ban store (nil before
// provisioning), for admin.DistinctStores.
func (h *Handler) stateStore() state.Store { return h.store }

// Interface guards.
var (
	_ caddy.Module      = (*adminAPI)(nil)
	_ caddy.AdminRouter = (*adminAPI)(nil)
)
