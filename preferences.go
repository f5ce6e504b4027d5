package caddyrobots

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// AI usage preferences (IETF aipref Content-Usage, Cloudflare's
// Content-Signal) that a site states in its robots.txt: exposed as
// placeholders for every request, optionally sent as a Content-Usage
// header, and, with preferences enforce, held against the crawlers whose
// documented purpose they exclude. A file without either record costs one
// atomic load per request (the table remembers whether any version it
// holds states preferences).

// withPreferences sets the preference placeholders of r and, with
// preferences header or enforce, wraps w to add the Content-Usage header.
// It runs only when some robots.txt version of the table states
// preferences.
func (h *Handler) withPreferences(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	v := h.rules.Peek(r, policy.HostOf(r.Host)).Current()
	if v == nil || !v.Robots.HasPreferences() {
		return w
	}
	var tokens []string
	if a := h.identifyRequest(r); a != nil {
		tokens = a.Tokens
	}
	sent := sentRequest(r)
	t := policy.ParseTarget(sent.Method, sent.RequestURI)
	p := v.Robots.Preferences(tokens, t.Raw)
	usage, signal := p.String(), p.SignalString()
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.robots.content_usage", usage)
		repl.Set("http.robots.content_signal", signal)
	}
	if !h.prefsHeader || usage == "" {
		return w
	}
	return &usageHeaderWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, usage: usage}
}

// usageHeaderWriter adds Content-Usage to the response unless the backend
// set one.
type usageHeaderWriter struct {
	*caddyhttp.ResponseWriterWrapper
	usage string
	done  bool
}

func (u *usageHeaderWriter) WriteHeader(code int) {
	if !u.done {
		u.done = true
		if hdr := u.Header(); hdr.Get("Content-Usage") == "" {
			hdr.Set("Content-Usage", u.usage)
		}
	}
	u.ResponseWriterWrapper.WriteHeader(code)
}

func (u *usageHeaderWriter) Write(p []byte) (int, error) {
	if !u.done {
		u.WriteHeader(http.StatusOK)
	}
	return u.ResponseWriterWrapper.Write(p)
}
