package admin

// Site blocks: each handler is named by the site block it serves, and lists
// the sites that block serves. Handlers of one server load robots.txt
// through one site table, so each loader knows every site of its server;
// a site belongs to the handler whose block's host patterns match its host
// (a catch-all block takes the hosts no other block of the server matches).

import (
	"slices"
	"strconv"
	"strings"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// siteBlockOf names s's site block for the status and the admin answers:
// its Block's name, else "handler <i>" (a handler in no route of the
// running config, before any request).
func siteBlockOf(s Site, i int) string {
	if s.Block != nil && s.Block.Name != "" {
		return s.Block.Name
	}
	return "handler " + strconv.Itoa(i) + " (not in the running config's routes)"
}

// keepOwnSites leaves each handler of rep (described by ss) with the sites
// its own site block serves. Handlers whose block is unknown keep every
// site.
func keepOwnSites(rep *StatusReport, ss []Site) {
	for i := range rep.Handlers {
		h := &rep.Handlers[i]
		s := ss[h.Index]
		if s.Block == nil || s.Source != "site" {
			continue
		}
		own := h.Sites[:0:0]
		for _, st := range h.Sites {
			if servesHost(s, st.Host, ss, h.Server) {
				own = append(own, st)
			}
		}
		h.Sites = own
	}
}

// servesHost reports whether the site block of s serves host (a site's
// host, maybe with a port): its host patterns match it, or s is a
// catch-all and no other block loading through the same server matches it.
func servesHost(s Site, host string, ss []Site, server string) bool {
	if len(s.Block.Hosts) > 0 {
		return matchesAny(s.Block.Hosts, host)
	}
	for _, o := range ss {
		if o.Block == nil || len(o.Block.Hosts) == 0 || o.Loader == nil || o.Loader.Server() != server {
			continue
		}
		if matchesAny(o.Block.Hosts, host) {
			return false
		}
	}
	return true
}

// matchesAny reports whether host matches one of patterns as Caddy's host
// matcher does: case-insensitively, "*" standing for one label.
func matchesAny(patterns []string, host string) bool {
	host = policy.HostOf(host)
	for _, p := range patterns {
		if policy.HostPatternMatches(strings.ToLower(p), host) {
			return true
		}
	}
	return false
}

// distinctSites counts the sites of rep once each, however many handlers
// list them: a source site's by server and host, a file's or inline
// text's by handler.
func distinctSites(rep StatusReport) int {
	seen := map[string]bool{}
	for _, h := range rep.Handlers {
		for _, st := range h.Sites {
			k := h.Server + "|" + st.Host
			if h.Source != "site" {
				k = "handler|" + strconv.Itoa(h.Index)
			}
			seen[k] = true
		}
	}
	return len(seen)
}

// shareIPLists puts the IP lists every handler shares into rep.IPLists,
// once, and leaves a handler's own only when they differ (another verify
// ranges configuration).
func shareIPLists(rep *StatusReport) {
	rep.IPLists = []IPListStatus{}
	for _, h := range rep.Handlers {
		if len(h.IPLists) > 0 {
			rep.IPLists = h.IPLists
			break
		}
	}
	for i := range rep.Handlers {
		h := &rep.Handlers[i]
		if slices.EqualFunc(h.IPLists, rep.IPLists, sameIPList) {
			h.IPLists = nil
		}
	}
}

func sameIPList(a, b IPListStatus) bool {
	return a.Method == b.Method && a.AsOf.Equal(b.AsOf) && a.ProvesSpoofs == b.ProvesSpoofs && slices.Equal(a.Sources, b.Sources)
}

// ownerOf returns the index in ss of the handler whose site block serves
// host loaded through server, for the admin answers about a site: the
// loader that reloaded it may be another handler's of the same server
// (they share their sites). fallback when no block is known to serve it.
func ownerOf(ss []Site, host, server string, fallback int) int {
	if host == "" {
		return fallback
	}
	for i, s := range ss {
		if s.Block == nil || s.Source != "site" || s.Loader == nil || s.Loader.Server() != server {
			continue
		}
		if servesHost(s, host, ss, server) {
			return i
		}
	}
	return fallback
}
