package audit

// Undeclared crawlers: scripts that wear a browser's User-Agent, caught as
// the handler catches them (undeclared.go in the root package,
// whose rules are policy's: policy.UndeclaredModes, policy.TrapMark,
// policy.TrapRule).
//
//   - The header rule: over a secure context, a browser's claim without the
//     headers that browser always sends. It needs the request's headers,
//     which only Caddy's JSON log records (request.headers, request.tls):
//     the Common and Combined Log Formats record none, and their lines are
//     never judged by it.
//   - The trap: a client that asks for the trap path, which the robots.txt
//     in force disallows for "*", is marked (address, whole User-Agent)
//     for the hold, at the line's time; text browsers are on probation
//     first. It applies to every format that records the User-Agent.
//   - The tls signal: a browser's claim over a TLS handshake that refutes
//     it, read from the fields log_append adds to Caddy's JSON log (tls.go);
//     with a fingerprint, trap marks and state follow the handshake.
//
// An undeclared crawler is judged like any unnamed bot, by the "*" group,
// with its state under its identity (judge), in log mode (its own state,
// nothing refused) when its signal is in log mode.

import (
	"bytes"
	"hash/maphash"
	"net/netip"
	"net/url"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// trapKey is whom a trap mark belongs to, as the handler keys it: the state
// scope (log mode's apart), the address's network, the User-Agent's hash.
type trapKey struct {
	scope  string
	prefix netip.Prefix
	ua     uint64
}

// signalCount is what one signal caught.
type signalCount struct {
	requests    int64 // judged as an undeclared crawler's (trap requests included)
	refused     int64 // refused (the signal and the handler enforce)
	wouldRefuse int64 // judged in log mode and refused there: what enforce would refuse
	traps       int64 // trap requests that marked a client
	// trapsUnmarked are trap requests another page or the browser caused
	// (policy.TrapMarks): refused, nobody marked.
	trapsUnmarked int64
	probation     int64 // of them, a text browser's first: probation only
}

// initUndeclared reads the signals' modes and the trap from the Config.
func (a *Auditor) initUndeclared() {
	if a.cfg.Undeclared != nil {
		a.dis = *a.cfg.Undeclared
	} else {
		a.dis = policy.NewUndeclaredModes("", nil, a.cfg.Trap != "")
	}
	if a.cfg.Trap == "" {
		a.dis[policy.SignalTrap] = policy.SignalOff
	}
	if a.cfg.TrapHold <= 0 {
		a.cfg.TrapHold = policy.DefaultTrapHold
	}
	a.disOn, a.headers = a.dis.On(), a.dis.Headers()
	if a.disOn {
		a.claims = agents.NewBrowserClaims(4096)
		a.trapSeed = maphash.MakeSeed()
	}
}

// trapOn reports whether the trap signal is on.
func (a *Auditor) trapOn() bool { return a.dis[policy.SignalTrap] != policy.SignalOff }

// secure reports whether the request reached the site in a secure context,
// as the handler reads it: over TLS, to a loopback host
// (agents.IsSecureHost), or from a proxy the server trusts whose
// X-Forwarded-Proto says https. The log does not say whether the proxy was
// trusted; Caddy sets client_ip from X-Forwarded-For only for a trusted
// proxy, so a client_ip other than the remote_ip is one (a trusted proxy
// that sends no X-Forwarded-For is not seen: its requests are not judged by
// the header rule here).
func secure(e *Entry) bool {
	if e.TLS || agents.IsSecureHost(unsafeString(e.Host)) {
		return true
	}
	return len(e.ForwardedProto) > 0 && len(e.ClientIP) > 0 && !bytes.Equal(e.ClientIP, e.RemoteIP) &&
		bytes.EqualFold(bytes.TrimSpace(e.ForwardedProto), []byte("https"))
}

// checkUndeclared is the handler's check of a request it took for a
// person's (the root's undeclared.go, checkUndeclared): the trap first,
// then the tls signal and the header rule, of which the strictest mode
// decides (a header signal on a tie). It reports whether the request was
// an undeclared crawler's, and then judges and counts it.
func (a *Auditor) checkUndeclared(ue *uaEntry, he *hostEntry, e *Entry, t time.Time) (bool, error) {
	trap := a.trapOn()
	headers := a.headers && e.HasHeaders && !a.dis.PassesHeaders(e.Signals) && secure(e)
	fp, hasFP := fingerprintOf(e)
	tlsOn := hasFP && fp.hello && !fp.engine.IsBrowser() && a.dis[policy.SignalTLS] != policy.SignalOff
	if !trap && !headers && !tlsOn {
		return false, nil
	}
	path, escaped := requestPath(e.URI)
	if path == "/robots.txt" {
		// Always served, before anything is judged.
		return false, nil
	}
	var fpp *tlsSeen
	if hasFP {
		fpp = &fp
	}
	if trap {
		if policy.IsTrap(path, a.cfg.Trap) {
			return a.takeTrap(ue, he, e, t, escaped, fpp)
		}
		if mode, ok := a.trapMarked(he, e, t, path, fpp); ok {
			c := &a.claimOf(ue, e.UserAgent).Claim
			rulesOnly := secure(e) && policy.CarriesClaim(c, e.Signals)
			return true, a.judgeUndeclared(ue, he, e, t, policy.SignalTrap, mode, rulesOnly, fpp)
		}
	}
	tlsWhy, tlsMode := "", policy.SignalOff
	if tlsOn {
		if tlsWhy = a.tlsWhy(ue, e, fpp); tlsWhy != "" {
			tlsMode = a.dis[policy.SignalTLS]
		}
	}
	s, mode := policy.SignalFetchMetadata, policy.SignalOff
	if headers {
		s, mode = a.dis.JudgeHeaders(&a.claimOf(ue, e.UserAgent).Claim, e.Signals, e.Kind())
	}
	switch {
	case tlsMode > mode:
		return true, a.judgeTLS(ue, he, e, t, tlsMode, fpp, tlsWhy)
	case mode == policy.SignalOff:
		return false, nil
	}
	return true, a.judgeUndeclared(ue, he, e, t, s, mode, false, fpp)
}

// claimOf returns what the User-Agent of ue (ua) claims, looked up once.
func (a *Auditor) claimOf(ue *uaEntry, ua []byte) *agents.ClaimEntry {
	if ue.claim == nil {
		ue.claim = a.claims.Lookup(string(ua))
	}
	return ue.claim
}

// undeclaredEntry returns the undeclared crawler a client whose User-Agent
// is ue's is judged as (agents.UndeclaredAgent: "Chrome (undeclared)").
func (a *Auditor) undeclaredEntry(ue *uaEntry, ua []byte) *uaEntry {
	if ue.und == nil {
		ue.und = &uaEntry{sh: a.claimOf(ue, ua).Undeclared, judged: true}
	}
	return ue.und
}

// enforced reports whether a signal in mode m refuses here.
func (a *Auditor) enforced(m policy.SignalMode) bool { return m.Enforced(!a.cfg.LogMode) }

// judgeUndeclared judges the request of an undeclared crawler caught by
// signal s in mode m: like any unnamed bot, by the "*" group, in the
// handler's state scope when the signal enforces, in log mode's otherwise.
//
// Its state is its own (undeclaredStateName: with a fingerprint fp, the
// handshake's); with rulesOnly (a request with every header of its
// claimed browser, judged only because of a trap mark), robots.txt's rules
// alone apply (policy.Client.RulesOnly).
func (a *Auditor) judgeUndeclared(ue *uaEntry, he *hostEntry, e *Entry, t time.Time, s policy.Signal, m policy.SignalMode, rulesOnly bool, fp *tlsSeen) error {
	j := judging{log: a.cfg.LogMode || !a.enforced(m), undeclared: true, signal: s,
		stateName: a.undeclaredStateName(ue, e, fp), rulesOnly: rulesOnly}
	return a.judgeAs(ue, he, e, t, &j)
}

// judgeTLS judges the request of an undeclared crawler caught by the tls
// signal in mode m (why: what its handshake fp refutes), as
// judgeUndeclared does, and counts it by handshake.
func (a *Auditor) judgeTLS(ue *uaEntry, he *hostEntry, e *Entry, t time.Time, m policy.SignalMode, fp *tlsSeen, why string) error {
	j := judging{log: a.cfg.LogMode || !a.enforced(m), undeclared: true, signal: policy.SignalTLS,
		stateName: a.undeclaredStateName(ue, e, fp), tls: fp, why: why, claims: a.claimOf(ue, e.UserAgent).TLS.Browser}
	return a.judgeAs(ue, he, e, t, &j)
}

// judgeAs counts an undeclared crawler's request and judges it as j says.
func (a *Auditor) judgeAs(ue *uaEntry, he *hostEntry, e *Entry, t time.Time, j *judging) error {
	a.undeclared++
	he.agg.undeclared++
	return a.judge(a.undeclaredEntry(ue, e.UserAgent), he, e, t, *j)
}

// countUndeclared counts an undeclared crawler's judged request.
func (a *Auditor) countUndeclared(c *crawler, j *judging, refused bool) {
	c.signals[j.signal]++
	sc := &a.signals[j.signal]
	sc.requests++
	if !refused {
		return
	}
	if j.log {
		c.refusedLog++
		sc.wouldRefuse++
	} else {
		sc.refused++
	}
}

// trapKeyOf is the key of the request's client (fp: its handshake, nil
// for none) among the marks of the trap in mode m (the handler's trapMode
// and trapKeyOf).
func (a *Auditor) trapKeyOf(he *hostEntry, e *Entry, m policy.SignalMode, fp *tlsSeen) trapKey {
	scope := he.logScope
	if a.enforced(m) {
		scope = he.scope
	}
	ip, _ := netip.ParseAddr(unsafeString(e.Addr()))
	return trapKey{scope: scope, prefix: policy.TrapPrefix(ip), ua: a.trapClient(e, fp)}
}

// trapMarked reports whether the request comes from a client that took the
// trap and is judged as a crawler at t (policy.TrapMark.Judged), with the
// trap signal's mode. A line without a time is never judged so: the marks
// are replayed in time.
func (a *Auditor) trapMarked(he *hostEntry, e *Entry, t time.Time, path string, fp *tlsSeen) (policy.SignalMode, bool) {
	mode := a.dis[policy.SignalTrap]
	if len(a.marks) == 0 || t.IsZero() || t.After(a.marksUntil) {
		return mode, false
	}
	m := a.marks[a.trapKeyOf(he, e, mode, fp)]
	if m == nil {
		return mode, false
	}
	return mode, m.Judged(t, policy.IsDocument(path, unsafeString(e.Accept)))
}

// takeTrap is a request for the trap (the handler's takeTrap): when the
// robots.txt in force disallows it for "*", the client is marked at the
// line's time and the request is refused (403) in enforce; otherwise it
// passes as a person's, judged by nothing else.
func (a *Auditor) takeTrap(ue *uaEntry, he *hostEntry, e *Entry, t time.Time, escaped string, fp *tlsSeen) (bool, error) {
	rule, ok := policy.TrapRule(a.robotsNow, escaped)
	if !ok {
		return false, nil
	}
	mode := a.dis[policy.SignalTrap]
	j := judging{log: a.cfg.LogMode || !a.enforced(mode), undeclared: true, signal: policy.SignalTrap}
	ua := unsafeString(e.UserAgent)
	confirmed := !agents.IsTextBrowser(ua)
	marks := policy.TrapMarks(e.Kind())
	if !marks {
		confirmed = false
	}
	if marks && !t.IsZero() {
		key := a.trapKeyOf(he, e, mode, fp)
		m := a.marks[key]
		if m == nil {
			m = a.newMark(key)
		}
		m.Take(t, a.cfg.TrapHold, ua)
		confirmed = m.Confirmed
		if m.Until.After(a.marksUntil) {
			a.marksUntil = m.Until
		}
	}
	a.undeclared++
	he.agg.undeclared++
	und := a.undeclaredEntry(ue, e.UserAgent)
	c := a.row(und, he)
	c.requests++
	c.seen(t)
	c.signals[policy.SignalTrap]++
	c.refused++
	c.reasons[policy.Rule]++
	c.rules[rule]++
	sc := &a.signals[policy.SignalTrap]
	sc.requests++
	if !marks {
		// Another page or the browser caused it: the trap's 403, nothing
		// else (policy.TrapMarks).
		c.trapsUnmarked++
		sc.trapsUnmarked++
	} else {
		c.traps++
		sc.traps++
	}
	if marks && !confirmed {
		c.probation++
		sc.probation++
	}
	if j.log {
		c.refusedLog++
		sc.wouldRefuse++
	} else {
		sc.refused++
	}
	a.series(c, t, true)
	return true, a.dec.trap(e, und, rule, confirmed, &j)
}

// newMark adds a mark for key to the bounded table of marks (an arbitrary
// one is dropped when it is full, as the handler's table drops one).
func (a *Auditor) newMark(key trapKey) *policy.TrapMark {
	if a.marks == nil {
		a.marks = map[trapKey]*policy.TrapMark{}
	}
	if len(a.marks) >= policy.TrapMarksMax {
		for k := range a.marks {
			delete(a.marks, k)
			break
		}
	}
	m := &policy.TrapMark{}
	a.marks[key] = m
	return m
}

// requestPath returns the path of a request target as Go's HTTP server
// reads it into the request's URL: decoded (URL.Path) and as sent
// (URL.EscapedPath()). A target of plain characters costs no allocation; a
// target Go would not parse has no path.
func requestPath(uri []byte) (path, escaped string) {
	if len(uri) > 0 && uri[0] == '/' {
		end, plain := len(uri), true
		for i, c := range uri {
			if c == '?' {
				end = i
				break
			}
			if !pathPlain[c] {
				plain = false
				break
			}
		}
		if plain {
			p := unsafeString(uri[:end])
			return p, p
		}
	}
	u, err := url.ParseRequestURI(string(uri))
	if err != nil {
		return "", ""
	}
	return u.Path, u.EscapedPath()
}

// pathPlain are the bytes a path may hold that read the same decoded and
// as sent (url.URL.EscapedPath keeps them as they are).
var pathPlain = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~/!$&'()*+,;=:@" {
		t[c] = true
	}
	return t
}()

// undeclaredSignals reports what each signal caught, with the modes as
// applied (the handler's mode log makes every signal's log). The tls
// signal is among them only when a line carried a fingerprint: without
// one, the log has no handshake to judge (tls.go).
func (a *Auditor) undeclaredSignals() []SignalReport {
	out := make([]SignalReport, 0, policy.NumSignals)
	for i, sc := range a.signals {
		s, m := policy.Signal(i), a.dis[i]
		if s == policy.SignalTLS && a.tlsLines == 0 {
			continue
		}
		if m == policy.SignalEnforce && a.cfg.LogMode {
			m = policy.SignalLog
		}
		out = append(out, SignalReport{Signal: s.String(), Mode: m.String(), Requests: sc.requests, Refused: sc.refused,
			WouldRefuse: sc.wouldRefuse, TrapRequests: sc.traps, Probation: sc.probation, TrapUnmarked: sc.trapsUnmarked})
	}
	return out
}
