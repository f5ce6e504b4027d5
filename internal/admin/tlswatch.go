package admin

// What the tls signal saw, per site block, for the status page and GET
// /robots/status: whether requests over HTTPS carry a fingerprint at all,
// and, by fingerprint, the clients whose browser claim the handshake
// refuted. The signal defaults to log because a person behind a
// TLS-inspecting proxy looks like a library; this table is how an operator
// sees whom enforce would refuse before turning it on.

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of a TLSWatch: whatever a flood of handshakes sends, it holds at
// most TLSWatchMax fingerprints per mode, each with at most
// TLSWatchNetworks networks and TLSWatchClaims claimed browsers.
const (
	TLSWatchMax      = 64
	TLSWatchNetworks = 8
	TLSWatchClaims   = 4
)

// TLSWatch counts what a site block's tls signal saw. The zero value is
// ready to use, and it is safe for concurrent use. Seen is the only part a
// person's request reaches (one atomic add); the table behind Judged is
// written only for requests the signal judged as an undeclared crawler's.
type TLSWatch struct {
	withFingerprint, withoutFingerprint atomic.Uint64

	mu sync.Mutex
	// tables holds the judged clients by JA4: [0] in mode log, [1] in
	// mode enforce; nil until the first of each.
	tables [2]map[string]*TLSClient
	// dropped counts, per mode, the requests of fingerprints evicted to
	// make room for others.
	dropped [2]uint64
}

// TLSJudgement is one request the tls signal judged as an undeclared
// crawler's, as the root's hook reports it.
type TLSJudgement struct {
	// JA4 is the handshake's fingerprint; Engine the stack it comes from
	// (ja4.Engine's name: library or unknown).
	JA4, Engine string
	// Why is what the signal found (policy.TLSVerdict): the handshake's
	// fact, naming the library family.
	Why string
	// Claim is the browser the User-Agent claimed (agents.TLSClaim's
	// Browser: "Chrome", "Firefox", "a browser", ...).
	Claim string
	// Network is the client's address as state identities count it
	// (IPv4 /32, IPv6 /64), shown as the ban list shows it.
	Network netip.Prefix
	// Enforced says the signal refuses (mode enforce in a handler in mode
	// enforce); otherwise it only logs.
	Enforced bool
	At       time.Time
}

// TLSClient is one fingerprint the tls signal judged, in one mode.
type TLSClient struct {
	JA4    string `json:"ja4"`
	Engine string `json:"engine"`
	// Why is what the signal found, the last time.
	Why string `json:"why"`
	// Claimed are the browsers the User-Agents claimed, at most
	// TLSWatchClaims (the first ones seen).
	Claimed  []string `json:"claimed"`
	Requests uint64   `json:"requests"`
	// Networks are the distinct client networks (IPv4 /32, IPv6 /64), at
	// most TLSWatchNetworks (the first ones seen); MoreNetworks says
	// there were others.
	Networks     []string  `json:"networks"`
	MoreNetworks bool      `json:"more_networks,omitempty"`
	First        time.Time `json:"first_seen"`
	Last         time.Time `json:"last_seen"`
}

// TLSStatus is a site block's TLSWatch as GET /robots/status shows it.
type TLSStatus struct {
	// WithFingerprint and WithoutFingerprint count the requests over
	// HTTPS (or with a trusted proxy's fingerprint header) that reached
	// the undeclared-crawler checks: people's and undeclared crawlers'.
	// Only the first are judged by the tls signal; many of the second
	// mean the server lacks the robots_fingerprint listener wrapper.
	WithFingerprint    uint64 `json:"with_fingerprint"`
	WithoutFingerprint uint64 `json:"without_fingerprint"`
	// Logged are the fingerprints the signal judged in mode log (whom
	// enforce would judge by the "*" group of robots.txt), most requests
	// first; Enforced those it judged in mode enforce.
	Logged   []TLSClient `json:"logged"`
	Enforced []TLSClient `json:"enforced"`
	// DroppedLogged and DroppedEnforced are the requests of fingerprints
	// the tables dropped to make room (a flood of distinct handshakes).
	DroppedLogged   uint64 `json:"dropped_logged,omitempty"`
	DroppedEnforced uint64 `json:"dropped_enforced,omitempty"`
}

// Seen counts a request over HTTPS that reached the tls signal, with a
// fingerprint or without.
func (w *TLSWatch) Seen(fingerprinted bool) {
	if fingerprinted {
		w.withFingerprint.Add(1)
	} else {
		w.withoutFingerprint.Add(1)
	}
}

// Judged records a request the tls signal judged as an undeclared
// crawler's. A fingerprint not in the table takes the place of the one
// with the fewest requests when the table is full, so a flood of distinct
// handshakes churns only among its own one-request entries while the
// clients that keep coming stay listed.
func (w *TLSWatch) Judged(j TLSJudgement) {
	mode := 0
	if j.Enforced {
		mode = 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.tables[mode]
	if t == nil {
		t = make(map[string]*TLSClient)
		w.tables[mode] = t
	}
	c, ok := t[j.JA4]
	if !ok {
		if len(t) >= TLSWatchMax {
			w.dropped[mode] += evictFewest(t)
		}
		c = &TLSClient{JA4: j.JA4, First: j.At}
		t[j.JA4] = c
	}
	c.Engine, c.Why, c.Last = j.Engine, j.Why, j.At
	c.Requests++
	if j.Claim != "" && !slices.Contains(c.Claimed, j.Claim) && len(c.Claimed) < TLSWatchClaims {
		c.Claimed = append(c.Claimed, j.Claim)
	}
	if j.Network.IsValid() {
		c.addNetwork(j.Network.String())
	}
}

// addNetwork adds n to c's networks, or notes that there are more.
func (c *TLSClient) addNetwork(n string) {
	switch {
	case slices.Contains(c.Networks, n):
	case len(c.Networks) < TLSWatchNetworks:
		c.Networks = append(c.Networks, n)
	default:
		c.MoreNetworks = true
	}
}

// evictFewest removes the client of t with the fewest requests (the least
// recently seen of those) and returns its requests.
func evictFewest(t map[string]*TLSClient) uint64 {
	var worst *TLSClient
	for _, c := range t {
		if worst == nil || c.Requests < worst.Requests || c.Requests == worst.Requests && c.Last.Before(worst.Last) {
			worst = c
		}
	}
	delete(t, worst.JA4)
	return worst.Requests
}

// Status returns a copy of what w counted, each table ordered by requests.
func (w *TLSWatch) Status() TLSStatus {
	if w == nil {
		return TLSStatus{Logged: []TLSClient{}, Enforced: []TLSClient{}}
	}
	st := TLSStatus{WithFingerprint: w.withFingerprint.Load(), WithoutFingerprint: w.withoutFingerprint.Load()}
	w.mu.Lock()
	defer w.mu.Unlock()
	st.Logged, st.Enforced = sortedClients(w.tables[0]), sortedClients(w.tables[1])
	st.DroppedLogged, st.DroppedEnforced = w.dropped[0], w.dropped[1]
	return st
}

// sortedClients copies t's clients, most requests first (then by JA4, so
// that the order is stable).
func sortedClients(t map[string]*TLSClient) []TLSClient {
	out := make([]TLSClient, 0, len(t))
	for _, c := range t {
		cp := *c
		cp.Claimed, cp.Networks = append([]string{}, c.Claimed...), append([]string{}, c.Networks...)
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b TLSClient) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.JA4, b.JA4))
	})
	return out
}
