package audit

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
	raw   string // the Host as logged
	host  string // policy.HostOf(raw), or Config.Site for lines without a Host
	scope string // the state scope (stateScope)
	// logScope is the state scope in mode log: that of an undeclared
	// crawler caught by a signal in log mode.
	logScope string
	agg      *hostAgg // where its lines are counted
	keep     bool     // it passes Config.Hosts
}
