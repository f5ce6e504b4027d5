package caddyrobots

import (
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// outcome is a judged bot request: the facts the decision read and the
// assessment it made. Everything shown to people (the refusal text, log
// lines, placeholders, the admin check's JSON) is rendered from it after
// the decision.
type outcome struct {
	published
	// Judgement is the request as read, the facts the decision read, the
	// assessment and what judging did (pipeline.Pipeline.Judge).
	pipeline.Judgement
	// text, when set, is the refusal text itself (an invalid signature,
	// which is refused before any decision).
	text string
}

// published is the part of an outcome that the {http.robots.*}
// placeholders read. It is kept small (56 bytes) and comparable: the
// provider of an outcome seen recently is reused (placeholders.go).
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

// publish copies the assessment's placeholder facts into published.
func (o *outcome) publish() {
	as := &o.Assessment
	o.action, o.reason, o.verdict, o.token = as.Action, as.Reason, as.Verdict, as.Token
	o.decision, o.version, o.retryAfter = as.Decision, as.Version, as.RetryAfter
}

// message is the refusal text the crawler receives.
func (o *outcome) message() string {
	if o.text != "" {
		return o.text
	}
	f := o.Facts()
	return policy.Explain(&o.Assessment, &f, o.Host)
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
func (o *outcome) form() string { return o.Assessment.RefusedFormText(&o.Target) }

// actionValues holds the action names as interface values, boxed once, so
// publishing a decision as a var does not allocate.
var actionValues = func() (v [policy.Actions]any) {
	for i := range v {
		v[i] = policy.Action(i).String()
	}
	return v
}()

// tokenValue is the token whose group was selected ("*" for the wildcard
// group, "" when none applies) as an interface value, without allocating:
// the agent's tokens come boxed from the Identifier's cache.
func (o *published) tokenValue() any {
	switch o.token {
	case policy.TokenWildcard:
		return "*"
	case policy.TokenNone:
		return ""
	}
	return o.agent.TokenValues[o.token]
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
		// One lazy provider instead of ten values: the strings are only
		// built when a log line or handle_errors asks for them.
		repl.Map(o.published.provider())
	}
	if vars := cv.vars; vars != nil {
		// What caddyhttp.SetVar does, without looking the map up three times.
		// The values come boxed from the Identifier's cache: no allocation.
		vars["robots_agent"] = a.NameValue
		vars["robots_decision"] = actionValues[o.action]
		vars["robots_token"] = o.tokenValue()
	}

	countDecision(o.action, o.reason, a.Category, a.Purpose, o.Mode == pipeline.Log)
	if o.action != policy.Allow {
		h.logRefusal(r, o)
	}
	if h.debug {
		h.logDecision(o)
	}
	if o.action == policy.Allow || o.Mode == pipeline.Log {
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
			zap.String("verdict", o.verdict.String()), zap.String("token", o.tokenName()), zap.String("target", o.Target.Raw),
			zap.String("mode", o.Mode.String()),
		}
		if o.decision.Rule != nil {
			fields = append(fields, zap.String("rule", o.decision.Rule.String()))
		}
		if form := o.form(); form != "" {
			fields = append(fields, zap.String("normalised_target", form))
		}
		if o.Assessment.NoStrike != "" {
			fields = append(fields, zap.String("no_strike", o.Assessment.NoStrike))
		}
		if o.version != nil {
			fields = append(fields, zap.String("version", o.version.ID))
		}
		c.Write(fields...)
	}
}
