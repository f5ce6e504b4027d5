package caddyrobots

import (
	"context"
	"net"
)

// resolverFor returns a resolver that sends every query to addr (host:port).
func resolverFor(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}
