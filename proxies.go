package caddyrobots

import (
	"reflect"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
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
