package caddyrobots

import (
	"strings"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// placeholder resolves the {http.robots.*} placeholders of one judged
// request. A judged request registers its method value o.placeholder with
// the request's replacer (publishOutcome): one provider instead of ten
// values, whose strings are only built when a log line or handle_errors
// asks for them. The value receiver gives the provider its own copy of
// what was published, so later changes to the outcome do not show.
func (o published) placeholder(key string) (any, bool) {
	name, ok := strings.CutPrefix(key, "http.robots.")
	if !ok {
		return nil, false
	}
	switch name {
	case "agent":
		return o.agent.Name, true
	case "category":
		return string(o.agent.Category), true
	case "purpose":
		return string(o.agent.Purpose), true
	case "verdict":
		return o.verdict.String(), true
	case "token":
		return o.tokenValue(), true
	case "decision":
		return actionValues[o.action], true
	case "reason":
		return o.reason.String(), true
	case "rule":
		if o.decision.Rule != nil {
			return o.decision.Rule.String(), true
		}
		return "", true
	case "group":
		if o.decision.Group != nil {
			return o.decision.Group.String(), true
		}
		return "", true
	case "version":
		if o.version != nil {
			return o.version.ID, true
		}
		return "", true
	case "retry_after":
		if o.retryAfter > 0 {
			return policy.RetryAfterSeconds(o.retryAfter), true
		}
		return "", true
	}
	return nil, false
}
