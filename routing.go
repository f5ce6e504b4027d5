package caddyrobots

import (
	"encoding/json"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/rewrite"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// robots.txt governs the URL the client sent, so the handler judges it
// whatever the operator's routing makes of it: inside handle_path /docs/*,
// a crawler's /docs/search/ is judged as /docs/search/, never as the
// stripped /search/. Rules written for the stripped paths (a docs app's
// own "Disallow: /search") therefore never match there. At load, the
// handler looks at where it sits and warns when a prefix is stripped ahead
// of it and its rules do not look like the site's: a file or inline text
// none of whose rules starts with the prefix. (With source site the rules
// are the site's own /robots.txt, loaded from the top of the server, which
// crawlers read for the whole site: nothing to warn about.)

// strippedPrefixes returns the path prefixes that rewrites strip ahead of
// the handler being provisioned in ctx, outermost first: handle_path and
// `uri strip_prefix` compile to a rewrite with strip_path_prefix in the
// same subroute.
func strippedPrefixes(ctx caddy.Context) []string {
	var out []string
	for _, m := range ctx.Modules() {
		sr, ok := m.(*caddyhttp.Subroute)
		if !ok {
			continue
		}
		for _, rt := range sr.Routes {
			// Routes before ours are provisioned (Handlers); ours is being
			// loaded (HandlersRaw, up to the robots handler).
			for _, mh := range rt.Handlers {
				if rw, ok := mh.(*rewrite.Rewrite); ok && rw.StripPathPrefix != "" {
					out = append(out, rw.StripPathPrefix)
				}
			}
			if p, ours := stripBeforeRobots(rt.HandlersRaw); ours {
				out = append(out, p...)
				break
			}
		}
	}
	return out
}

// stripBeforeRobots reads a route's raw handlers: the strip_path_prefix
// values of the rewrites before a robots handler, and whether the route
// holds one.
func stripBeforeRobots(raw []json.RawMessage) ([]string, bool) {
	var out []string
	for _, h := range raw {
		var v struct {
			Handler         string `json:"handler"`
			StripPathPrefix string `json:"strip_path_prefix"`
		}
		if json.Unmarshal(h, &v) != nil {
			continue
		}
		switch {
		case v.Handler == "robots":
			return out, true
		case v.Handler == "rewrite" && v.StripPathPrefix != "":
			out = append(out, v.StripPathPrefix)
		}
	}
	return nil, false
}

// warnStrippedPrefix warns when a prefix is stripped ahead of the handler
// and its rules (source file or inline) look written for the stripped
// paths. It returns the warning, "" when there is none.
func (h *Handler) warnStrippedPrefix(prefixes []string) string {
	if len(prefixes) == 0 || h.Source == "site" {
		return ""
	}
	prefix := "/" + strings.Trim(strings.Join(prefixes, ""), "/")
	var body []byte
	switch h.Source {
	case "inline":
		body = []byte(h.Inline)
	case "file":
		b, err := readRobotsFile(h.File)
		if err != nil {
			return ""
		}
		body = b
	}
	for _, g := range enforce.Parse(body).Groups() {
		for _, r := range g.Rules {
			if strings.HasPrefix(r.Pattern, prefix) {
				return ""
			}
		}
	}
	msg := "robots: this handler sits where " + prefix + " is stripped from the path (handle_path or uri strip_prefix), but none of its rules starts with " + prefix +
		": robots.txt governs the URL the client sent, so requests are judged as " + prefix + "/..., and rules written for the stripped paths never match. Write the rules with the full path, or use source site (the site's own /robots.txt)"
	h.warnConfig(msg, zap.String("source", h.Source), zap.String("prefix", prefix))
	return msg
}
