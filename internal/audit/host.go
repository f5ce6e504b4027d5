package audit

import "strings"

// HostOf returns the host name of a Host header (host[:port]) as the robots
// handler names a site in its state, logs and texts: lower-cased, without
// port, brackets or a trailing dot. It must agree with the handler's own
// reading (the root package's hostOf; a test there compares the two), or
// the audit keeps a crawler's state under another site than the server.
func HostOf(hostport string) string {
	h := hostport
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			h = h[1:i]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

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
	crawlers                                  []*crawler
	byName                                    map[string]*crawler
	other                                     *crawler // the crawlers beyond Config.MaxCrawlers
}

// hostEntry is what a raw Host value of the log stands for, cached.
type hostEntry struct {
	raw   string   // the Host as logged
	host  string   // HostOf(raw), or Config.Site for lines without a Host
	scope string   // the state scope (stateScope)
	agg   *hostAgg // where its lines are counted
	keep  bool     // it passes Config.Hosts
}
