package caddyrobots

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
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
// handlers of the running configurations from a process-wide registry.
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

// Limits of the admin API.
const (
	adminTop         = 10                     // crawlers and offenders listed per handler
	adminPingTimeout = 100 * time.Millisecond // a store's health check
	adminStoreWait   = 5 * time.Second        // listing or lifting bans
	adminReloadPar   = 4                      // sites loaded at once by /robots/reload
	adminMaxBody     = 64 << 10               // request body of /robots/check
)

func (a *adminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.Path
	switch {
	case path == "/robots/" || path == "/robots":
		if err := allowMethods(w, r, http.MethodGet, http.MethodHead); err != nil {
			return err
		}
		return a.servePage(w, r)
	case path == "/robots/status":
		if err := allowMethods(w, r, http.MethodGet); err != nil {
			return err
		}
		return writeJSON(w, buildStatus(r.Context(), handlers(), time.Now(), nil))
	case path == "/robots/check":
		if err := allowMethods(w, r, http.MethodPost); err != nil {
			return err
		}
		return a.serveCheck(w, r)
	case path == "/robots/bans":
		if err := allowMethods(w, r, http.MethodGet, http.MethodDelete); err != nil {
			return err
		}
		if r.Method == http.MethodDelete {
			return a.serveUnbanWhere(w, r)
		}
		return a.serveBans(w, r)
	case strings.HasPrefix(path, "/robots/bans/"):
		if err := allowMethods(w, r, http.MethodDelete); err != nil {
			return err
		}
		return a.serveUnban(w, r)
	case path == "/robots/reload":
		if err := allowMethods(w, r, http.MethodPost); err != nil {
			return err
		}
		return a.serveReload(w, r)
	case strings.HasPrefix(path, "/robots/versions/"):
		if err := allowMethods(w, r, http.MethodDelete); err != nil {
			return err
		}
		return a.serveWithdraw(w, r)
	}
	return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: no admin route %s (see /robots/ for the status page)", path)}
}

// allowMethods refuses a request whose method is not one of methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) error {
	for _, m := range methods {
		if r.Method == m {
			return nil
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("robots: method %s not allowed for %s (use %s)", r.Method, r.URL.Path, strings.Join(methods, " or "))}
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("robots: writing admin response: %w", err)
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Module      = (*adminAPI)(nil)
	_ caddy.AdminRouter = (*adminAPI)(nil)
)
