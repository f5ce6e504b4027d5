package caddyrobots

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"

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
//	GET    /robots/                 an HTML status page (read only)
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
// The admin module is a separate instance from the handlers: it reads the
// handlers of the running configurations from a process-wide registry
// (registry.go) and describes each as an admin.Site for internal/admin,
// which serves every route but /robots/check (admin_check.go).
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

// adminMaxBody bounds the request body of /robots/check.
const adminMaxBody = 64 << 10

// serve answers an admin request under /robots/; Caddy's admin server
// answers a caddy.APIError with its status, any other error with 500.
func (a *adminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	api := &admin.API{
		Sites:          func() []admin.Site { return adminSites(handlers()) },
		Check:          a.serveCheck,
		Lifted:         emitLifted,
		Logger:         caddy.Log().Named("admin.api.robots"),
		DefaultAddress: caddy.DefaultAdminListen,
	}
	err := api.Serve(w, r)
	var ae admin.Error
	if errors.As(err, &ae) {
		return caddy.APIError{HTTPStatus: ae.Status, Err: ae.Err}
	}
	return err
}

// writeJSON writes v as the admin API's JSON answer.
func writeJSON(w http.ResponseWriter, v any) error { return admin.WriteJSON(w, v) }

// adminSites describes hs for the admin API, in order.
func adminSites(hs []*Handler) []admin.Site {
	out := make([]admin.Site, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.adminSite())
	}
	return out
}

// adminSite describes h for the admin API, as it is now.
func (h *Handler) adminSite() admin.Site {
	s := admin.Site{
		Source:         h.Source,
		File:           h.File,
		Mode:           h.Mode,
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
	stats := h.statsNow()
	for _, c := range stats.top(admin.Top, false) {
		s.TopCrawlers = append(s.TopCrawlers, admin.CrawlerCount(c))
	}
	for _, c := range stats.top(admin.Top, true) {
		s.TopOffenders = append(s.TopOffenders, admin.CrawlerCount(c))
	}
	return s
}

// storeType is the type of h's throttle and strike store: memory or redis.
func (h *Handler) storeType() string {
	if h.Store != nil && h.Store.Type != "" {
		return h.Store.Type
	}
	return "memory"
}

// distinctStores returns the handlers of hs whose store no earlier handler
// uses: each store once, with the first handler that uses it.
func distinctStores(hs []*Handler) []*Handler {
	seen := map[state.Store]bool{}
	var out []*Handler
	for _, h := range hs {
		if h.store == nil || seen[h.store] {
			continue
		}
		seen[h.store] = true
		out = append(out, h)
	}
	return out
}

// Interface guards.
var (
	_ caddy.Module      = (*adminAPI)(nil)
	_ caddy.AdminRouter = (*adminAPI)(nil)
)
