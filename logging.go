package caddyrobots

// The INFO lines of refusals.
//
// Every refusal, throttle start and ban start is logged at INFO by the
// handler's logger (http.handlers.robots), with the facts that explain it.
// The lines are rate-limited so that a flood of refused requests cannot
// flood the log:
//
//   - per mode and identity (site, crawler as its state is kept, decision
//     and, for a crawler that is not verified, its address): a refusal at most every 10 seconds; a throttle
//     when it starts and then at most once a minute while it lasts; a ban
//     when it starts and not again until it has ended. The next line of the
//     identity says how many were held back ("suppressed");
//   - for the whole process: at most 50 lines a second. The next line that
//     gets through says how many were dropped ("dropped").
//
// The identities are kept in a bounded map (refusalLogMax entries); losing
// one only means its next refusal is logged.
//
// Caddy v2.11.9 writes the access-log line of any response with a status of
// 500 or more at ERROR, even when the handler wrote it and returned no
// error. The handler's 503 answers (a throttle, robots.txt unavailable, an
// unverified claim) are deliberate, so the handler sets the request
// variable log_level to INFO for them, unless the site set log_level
// itself; the access line then has the level of any other answered request.

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// Limits of the refusal lines.
const (
	refusalLogEvery   = 10 * time.Second // per identity, for a refusal
	throttleLogEvery  = time.Minute      // per identity, while a throttle lasts
	refusalLogPerSec  = 50               // for the process
	refusalLogMax     = 10000            // identities remembered
	maxLoggedUA       = 256              // bytes of User-Agent in a line
	maxLoggedTarget   = 512              // bytes of the request target in a line
	refusalLogMessage = "robots: request refused"
)

// refusalLimiter decides which refusal lines are written.
type refusalLimiter struct {
	mu  sync.Mutex
	ids map[string]*refusalEntry
	// sec is the second the global count is for; n the lines written in
	// it; dropped the lines held back by the global cap since the last
	// line written.
	sec     int64
	n       int
	dropped int
}

// refusalEntry is the state of one identity.
type refusalEntry struct {
	next       time.Time // no line before this
	suppressed int       // lines held back since the last one
}

// refusals limits the refusal lines of every handler of the process: the
// global cap is meant for the whole log.
var refusals = newRefusalLimiter()

func newRefusalLimiter() *refusalLimiter {
	return &refusalLimiter{ids: make(map[string]*refusalEntry)}
}

// allow reports whether the line of identity key may be written at now,
// after which the identity stays quiet for quiet. It returns the counts of
// lines held back for this identity and by the global cap.
func (l *refusalLimiter) allow(key string, now time.Time, quiet time.Duration) (ok bool, suppressed, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.ids[key]
	if e != nil && now.Before(e.next) {
		e.suppressed++
		return false, 0, 0
	}
	if sec := now.Unix(); sec != l.sec {
		l.sec, l.n = sec, 0
	}
	if l.n >= refusalLogPerSec {
		l.dropped++
		if e != nil {
			e.suppressed++
		}
		return false, 0, 0
	}
	l.n++
	if e == nil {
		l.makeRoom(now)
		e = &refusalEntry{}
		l.ids[key] = e
	}
	suppressed, dropped = e.suppressed, l.dropped
	e.next, e.suppressed, l.dropped = now.Add(quiet), 0, 0
	return true, suppressed, dropped
}

// makeRoom drops an identity when the map is full, preferring one whose
// quiet time is over; it looks at a few entries only (map order is random).
func (l *refusalLimiter) makeRoom(now time.Time) {
	if len(l.ids) < refusalLogMax {
		return
	}
	var victim string
	i := 0
	for k, e := range l.ids {
		if victim == "" || !now.Before(e.next) {
			victim = k
			if !now.Before(e.next) {
				break
			}
		}
		if i++; i >= 32 {
			break
		}
	}
	delete(l.ids, victim)
}

// logRefusal writes the INFO line of a refusal, a throttle start or a ban
// start (see the top of this file for the limits), and lowers the access
// log level of the handler's own 503 answers to INFO.
func (h *Handler) logRefusal(r *http.Request, o *outcome) {
	if o.Mode == pipeline.Enforce && (o.action == policy.Throttle || o.reason == policy.Unavailable || o.reason == policy.Unverified) {
		if _, set := caddyhttp.GetVar(r.Context(), caddyhttp.LogLevelVar).(string); !set {
			caddyhttp.SetVar(r.Context(), caddyhttp.LogLevelVar, "INFO")
		}
	}
	if h.logger == nil || !h.logger.Core().Enabled(zapcore.InfoLevel) {
		return
	}
	ip := o.Client.Addr
	if !ip.IsValid() {
		ip = clientIP(nil, r)
	}
	quiet, msg := refusalLogEvery, refusalLogMessage
	switch o.action {
	case policy.Throttle:
		quiet, msg = throttleLogEvery, "robots: throttling crawler"
	case policy.Ban:
		quiet, msg = max(o.retryAfter, refusalLogEvery), "robots: crawler banned"
	}
	ok, suppressed, dropped := refusals.allow(refusalKey(o, ip), h.now(), quiet)
	if !ok {
		return
	}
	c := h.logger.Check(zapcore.InfoLevel, msg)
	if c == nil {
		return
	}
	fields := refusalFields(r, o, ip)
	if suppressed > 0 {
		fields = append(fields, zap.Int("suppressed", suppressed))
	}
	if dropped > 0 {
		fields = append(fields, zap.Int("dropped", dropped))
	}
	c.Write(fields...)
}

// refusalKey is what a refusal's log line is limited by: one key per mode
// (a switch from log to enforce logs its first refusals and bans at once,
// whatever log mode logged), site, action and identity as its state is
// kept: a rotating address's new names are one identity here too.
func refusalKey(o *outcome, ip netip.Addr) string {
	var key strings.Builder
	key.WriteString(o.Mode.String())
	key.WriteByte(0)
	key.WriteString(o.Host)
	key.WriteByte(0)
	key.WriteString(o.action.String())
	key.WriteByte(0)
	key.WriteString(o.Who.StateName())
	if o.verdict != agents.Verified {
		key.WriteByte(0)
		key.WriteString(ip.String())
	}
	return key.String()
}

// refusalFields are the fields of a refusal's log line: the client, the
// crawler, the decision and what it read.
func refusalFields(r *http.Request, o *outcome, ip netip.Addr) []zap.Field {
	a := &o.agent.Agent
	fields := make([]zap.Field, 0, 18)
	fields = append(fields,
		zap.String("host", o.Host),
		zap.String("remote_ip", ip.String()),
		zap.String("user_agent", warnlimit.Shorten(userAgent(r), maxLoggedUA)),
		zap.String("crawler", a.Name),
		zap.String("category", string(a.Category)),
		zap.String("purpose", string(a.Purpose)),
		zap.String("verdict", o.verdict.String()),
		zap.String("decision", o.action.String()),
		zap.String("reason", o.reason.String()),
		zap.String("token", o.tokenName()),
		zap.String("target", warnlimit.Shorten(o.Target.Raw, maxLoggedTarget)),
		zap.String("mode", o.Mode.String()),
	)
	if g := o.decision.Group; g != nil {
		fields = append(fields, zap.String("group", g.String()))
	}
	if rule := o.decision.Rule; rule != nil {
		fields = append(fields, zap.String("rule", rule.String()), zap.Int("line", rule.Line))
	}
	if o.version != nil {
		fields = append(fields, zap.String("version", o.version.ID))
	}
	if form := o.form(); form != "" {
		fields = append(fields, zap.String("normalised_target", warnlimit.Shorten(form, maxLoggedTarget)))
	}
	if o.reason == policy.Rule {
		// A refusal by rule says whether it was a strike, and if not, why.
		fields = append(fields, zap.Bool("strike", o.Assessment.NoStrike == ""))
		if o.Assessment.NoStrike != "" {
			fields = append(fields, zap.String("no_strike", o.Assessment.NoStrike))
		}
	}
	if o.retryAfter > 0 {
		fields = append(fields, zap.String("retry_after", policy.RetryAfterSeconds(o.retryAfter)))
	}
	if o.action == policy.Ban {
		fields = appendBanFields(fields, o)
	}
	return fields
}

// appendBanFields adds who earned a ban, where, and by which rules.
func appendBanFields(fields []zap.Field, o *outcome) []zap.Field {
	info := o.Ban.Info
	if info.Scope != "" {
		fields = append(fields, zap.String("ban_site", info.Scope))
	}
	if info.Crawler != "" && info.Crawler != o.agent.Name {
		fields = append(fields, zap.String("earned_by", info.Crawler))
	}
	if len(info.Strikes) > 0 {
		lines := make([]int, len(info.Strikes))
		for i, s := range info.Strikes {
			lines[i] = s.Line
		}
		fields = append(fields, zap.Ints("strike_lines", lines), zap.String("strike_version", info.Strikes[len(info.Strikes)-1].Version))
	}
	if o.Who.Rotating {
		fields = append(fields, zap.Bool("rotating_address", true))
	}
	return fields
}
