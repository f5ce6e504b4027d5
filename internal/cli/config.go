package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// HandlerJSON reads a Caddyfile (or JSON config, with adapter "json" or a
// path ending in .json) and returns the JSON of the robots handler that
// serves site (host, or host:port to pick the server by its port), a
// description of where it sits, and the host patterns of the site block
// the handler serves (none: every host). The root package decodes the
// JSON into its handler (internal/cli does not know its fields).
func HandlerJSON(path, adapter, site string) (json.RawMessage, string, []string, error) {
	if site == "" {
		return nil, "", nil, errors.New("--config needs --site <host[:port]>: which site's robots handler judges")
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("reading config: %w", err)
	}
	if adapter == "" {
		adapter = "caddyfile"
		if strings.HasSuffix(path, ".json") {
			adapter = "json"
		}
	}
	cfgJSON := body
	if adapter != "json" {
		a := caddyconfig.GetAdapter(adapter)
		if a == nil {
			return nil, "", nil, fmt.Errorf("no config adapter %q", adapter)
		}
		cfgJSON, _, err = a.Adapt(body, map[string]any{"filename": path})
		if err != nil {
			return nil, "", nil, fmt.Errorf("adapting %s: %w", path, err)
		}
	}
	raw, where, hosts, err := findHandlerJSON(cfgJSON, site)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", path, err)
	}
	return raw, where, hosts, nil
}

// jsonRoute is a route of a JSON config, as far as finding a handler needs.
type jsonRoute struct {
	Match  []map[string]json.RawMessage `json:"match"`
	Handle []json.RawMessage            `json:"handle"`
	Group  string                       `json:"group"`
}

// findHandlerJSON returns the JSON of the robots handler that serves site
// in a config, a description of where it sits, and the host patterns of
// its site block (walkJSONRoutes).
func findHandlerJSON(cfg []byte, site string) (json.RawMessage, string, []string, error) {
	var c struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Listen []string    `json:"listen"`
					Routes []jsonRoute `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil, "", nil, fmt.Errorf("reading the config: %w", err)
	}
	host, port := site, 0
	if h, p, err := net.SplitHostPort(site); err == nil {
		host = h
		port, _ = strconv.Atoi(p)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	names := make([]string, 0, len(c.Apps.HTTP.Servers))
	for name := range c.Apps.HTTP.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	var seen []string
	for _, name := range names {
		srv := c.Apps.HTTP.Servers[name]
		if port != 0 && !ListensOn(srv.Listen, port) {
			continue
		}
		if raw, hosts, ok := walkJSONRoutes(srv.Routes, host); ok {
			return raw, fmt.Sprintf("server %s (%s), site %s", name, strings.Join(srv.Listen, " "), site), hosts, nil
		}
		seen = append(seen, name+" ("+strings.Join(srv.Listen, " ")+")")
	}
	return nil, "", nil, fmt.Errorf("no robots handler serves site %q (servers looked at: %s)", site, strings.Join(seen, ", "))
}

// walkJSONRoutes finds the first robots handler on host's path through
// routes; routes whose matchers other than host are ignored (a path
// matcher does not hide a site's handler). It also returns the host
// patterns of the outermost route on that path that has any: the site
// block's, whose hosts share the handler's state (none: every host).
func walkJSONRoutes(routes []jsonRoute, host string) (json.RawMessage, []string, bool) {
	for _, rt := range routes {
		if !routeHostMatches(rt.Match, host) {
			continue
		}
		patterns := routeHostPatterns(rt.Match)
		for _, h := range rt.Handle {
			var kind struct {
				Handler string      `json:"handler"`
				Routes  []jsonRoute `json:"routes"`
			}
			if json.Unmarshal(h, &kind) != nil {
				continue
			}
			switch kind.Handler {
			case "robots":
				return h, patterns, true
			case "subroute":
				if raw, inner, ok := walkJSONRoutes(kind.Routes, host); ok {
					if len(patterns) == 0 {
						patterns = inner
					}
					return raw, patterns, true
				}
			}
		}
	}
	return nil, nil, false
}

// routeHostPatterns returns the patterns of a route's host matchers, lower
// case.
func routeHostPatterns(sets []map[string]json.RawMessage) []string {
	var out []string
	for _, set := range sets {
		var hosts []string
		if raw, ok := set["host"]; ok && json.Unmarshal(raw, &hosts) == nil {
			for _, p := range hosts {
				out = append(out, strings.ToLower(p))
			}
		}
	}
	return out
}

// routeHostMatches reports whether a route's matcher sets let host through
// as far as their host matchers say.
func routeHostMatches(sets []map[string]json.RawMessage, host string) bool {
	if len(sets) == 0 {
		return true
	}
	for _, set := range sets {
		raw, ok := set["host"]
		if !ok {
			return true
		}
		var hosts []string
		if json.Unmarshal(raw, &hosts) != nil {
			continue
		}
		for _, p := range hosts {
			if policy.HostPatternMatches(strings.ToLower(p), host) {
				return true
			}
		}
	}
	return false
}

// ListensOn reports whether a server with these listen addresses (Caddy's
// network addresses, port ranges included) listens on port. It is the one
// rule by which both `caddy robots check` (on a config file) and the
// root's admin check (on the running config) pick a server by its port.
func ListensOn(listen []string, port int) bool {
	for _, l := range listen {
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
