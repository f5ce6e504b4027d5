package audit

import "github.com/caddyrobots/caddy-robots/internal/policy"

// stateScope is the scope of the throttle and strike state of a site's
// requests, as the handler keeps it: the host, and in mode log "log|" and
// the host, so that what log mode would have done never carries over into
// enforce mode.
func stateScope(host string, logMode bool) string {
	if logMode {
		return "log|" + host
	}
	return host
}

// hostAgg is the aggregate of one site (host) of the log.
type hostAgg struct {
	name                                      string // HostOf the Host; "" for lines without one
	lines, browsers, bots, own, noUA, ignored int64
	undeclared                                int64 // requests judged as undeclared crawlers'
	crawlers                                  []*crawler
	byName                                    map[string]*crawler
	// other and otherUndeclared are the declared and the undeclared
	// crawlers beyond Config.MaxCrawlers.
	other, otherUndeclared *crawler
}

// hostEntry is what a raw Host value of the log stands for, cached.
type hostEntry struct {
	raw  string // the Host as logged
	host string // policy.HostOf(raw), or Config.Site for lines without a Host
	// block is the state key of the site block (Config.Block, else the
	// host): the pipeline's Request.Block; desc names it for people.
	block string
	desc  string
	// scope and logScope are the scope of the trap's marks (stateScope of
	// the site block), in the config's mode and in mode log.
	scope, logScope string
	agg             *hostAgg // where its lines are counted
	keep            bool     // it passes Config.Hosts
}

// SiteBlock is a site block of a Caddy config, as far as the audit needs
// it: which hosts share its state.
type SiteBlock struct {
	// Name names it in reports: its host patterns, or "every host".
	Name string
	// Hosts are its host patterns, lower case ("*" stands for one label);
	// none: it serves every host.
	Hosts []string
}

// Serves reports whether the block serves host (policy.HostOf form).
func (b *SiteBlock) Serves(host string) bool {
	if len(b.Hosts) == 0 {
		return true
	}
	for _, p := range b.Hosts {
		if policy.HostPatternMatches(p, host) {
			return true
		}
	}
	return false
}
