package caddyrobots

import (
	"fmt"
	"net/http"
	"net/netip"
	"reflect"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

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
