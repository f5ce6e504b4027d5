package caddyrobots

import (
	"net/http"

	"github.com/caddyrobots/caddy-robots/agents"
)

// logRefusal writes the INFO line of a refusal, a throttle start or a ban
// start. (Filled in by the logging work of issue 13.)
func (h *Handler) logRefusal(r *http.Request, o *outcome, a *agents.Agent, target string) {
	_, _, _, _ = r, o, a, target
}
