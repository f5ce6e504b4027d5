package caddyrobots

import (
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// outcome is a judged bot request: the facts the decision read and the
// assessment it made. Everything shown to people (the refusal text, log
// lines, placeholders, the admin check's JSON) is rendered from it after
// the decision.
type outcome struct {
	published
	assessment policy.Assessment
	target     policy.Target
	client     policy.Client
	who        policy.Who
	site       policy.Site
	host       string
	// ban is the ban state read for the request (Banned false when none
	// or not read).
	ban state.BanResult
	// text, when set, is the refusal text itself (an invalid signature,
	// which is refused before any decision).
	text string
}

// published is the part of an outcome that the {http.robots.*}
// placeholders read (placeholders.go).
type published struct {
	action  policy.Action
	reason  policy.Reason
	verdict agents.Verdict
	// token is the token whose group was selected: an index into
	// agent.Tokens, policy.TokenWildcard or policy.TokenNone.
	token      int32
	agent      *agents.Shared // the Identifier's cached answer: read only
	decision   enforce.Decision
	version    *policy.Version
	retryAfter time.Duration
}

// facts returns the facts the decision read, for Assess and Explain.
func (o *outcome) facts(now time.Time) policy.Facts {
	return policy.Facts{Target: &o.target, Client: &o.client, Who: &o.who, Site: &o.site, Ban: &o.ban, Now: now}
}

// strikeInfo describes the strike this outcome counts, for the ban it may
// start: who, by which rule of which version, in which site block.
func (o *outcome) strikeInfo(scope string) state.StrikeInfo {
	si := state.StrikeInfo{Crawler: o.agent.Name, Token: o.assessment.TokenName(o.who.Tokens), Scope: scope}
	if r := o.assessment.Decision.Rule; r != nil {
		si.Line = r.Line
	}
	if v := o.assessment.Version; v != nil {
		si.Version = v.ID
	}
	return si
}

// publish copies the assessment's placeholder facts into published.
func (o *outcome) publish() {
	as := &o.assessment
	o.action, o.reason, o.verdict, o.token = as.Action, as.Reason, as.Verdict, as.Token
	o.decision, o.version, o.retryAfter = as.Decision, as.Version, as.RetryAfter
}

// message is the refusal text the crawler receives.
func (o *outcome) message() string {
	if o.text != "" {
		return o.text
	}
	f := o.facts(time.Time{})
	return policy.Explain(&o.assessment, &f, o.host)
}

// status is the HTTP status of a refusal.
func (o *outcome) status() int {
	switch {
	case o.action == policy.Throttle || o.reason == policy.Unavailable || o.reason == policy.Unverified:
		return http.StatusServiceUnavailable
	case o.reason == policy.BadTarget:
		return http.StatusBadRequest
	case o.reason == policy.TooLong:
		return http.StatusRequestURITooLong
	}
	return http.StatusForbidden
}

// form is the form of the target a rule or preference refused, when it
// differs from the target as sent.
func (o *outcome) form() string { return o.assessment.RefusedFormText(&o.target) }

// actionValues holds the action names as interface values, boxed once, so
// publishing a decision as a var does not allocate.
var actionValues = func() (v [policy.Actions]any) {
	for i := range v {
		v[i] = policy.Action(i).String()
	}
	return v
}()

// tokenValue is the token whose group was selected ("*" for the wildcard
// group, "" when none applies) as a value for the request's vars: the two
// constants are boxed without an allocation.
func (o *published) tokenValue() any {
	switch o.token {
	case policy.TokenWildcard:
		return "*"
	case policy.TokenNone:
		return ""
	}
	return o.agent.Tokens[o.token]
}

// tokenName is tokenValue as a string.
func (o *published) tokenName() string {
	s, _ := o.tokenValue().(string)
	return s
}

// publishOutcome publishes a judged request's outcome (placeholders, vars,
// the decision metric, the INFO line of a refusal, the debug line) and
// returns it when the request is to be refused.
//
// cv are the request's Caddy values (caddyValuesOf).
func (h *Handler) publishOutcome(r *http.Request, cv *caddyValues, o *outcome) *outcome {
	if o.text == "" {
		o.publish()
	}
	a := o.agent
	h.statsFor(r).seen(a, o.verdict, o.action)
	if repl := cv.repl; repl != nil {
		repl.Map(o.published.placeholder) // placeholders.go
	}
	if vars := cv.vars; vars != nil {
		// What caddyhttp.SetVar does, without looking the map up three times.
		vars["robots_agent"] = a.Name
		vars["robots_decision"] = actionValues[o.action]
		vars["robots_token"] = o.tokenValue()
	}

	countDecision(o.action, o.reason, a.Category, a.Purpose, !h.enforce)
	if o.action != policy.Allow {
		h.logRefusal(r, o)
	}
	if h.debug {
		h.logDecision(o)
	}
	if o.action == policy.Allow || !h.enforce {
		return nil
	}
	refused := *o
	return &refused
}

// logDecision writes the debug line of one decision.
func (h *Handler) logDecision(o *outcome) {
	if c := h.logger.Check(zapcore.DebugLevel, "robots decision"); c != nil {
		a := &o.agent.Agent
		fields := []zap.Field{
			zap.String("action", o.action.String()), zap.String("reason", o.reason.String()), zap.String("agent", a.Name),
			zap.String("purpose", string(a.Purpose)),
			zap.String("verdict", o.verdict.String()), zap.String("token", o.tokenName()), zap.String("target", o.target.Raw),
			zap.String("mode", h.Mode),
		}
		if o.decision.Rule != nil {
			fields = append(fields, zap.String("rule", o.decision.Rule.String()))
		}
		if form := o.form(); form != "" {
			fields = append(fields, zap.String("normalised_target", form))
		}
		if o.assessment.NoStrike != "" {
			fields = append(fields, zap.String("no_strike", o.assessment.NoStrike))
		}
		if o.version != nil {
			fields = append(fields, zap.String("version", o.version.ID))
		}
		c.Write(fields...)
	}
}
