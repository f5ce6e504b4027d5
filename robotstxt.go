package caddyrobots

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// serveRobotsTxt serves /robots.txt to everyone, even banned bots. For
// source file and inline it answers with the rules it enforces (unless
// robots_txt pass), so that crawlers read exactly what is enforced. For
// source site the site answers; when a client's copy differs from ours, the
// loader looks again. A bot's fetch is remembered so it stops getting grace
// for versions older than the one it just read.
func (h *Handler) serveRobotsTxt(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	stripRewriteHeaders(r)
	if a := h.identifyRequest(r); a != nil {
		cv := caddyValuesOf(r)
		var o outcome
		o.Host, o.Client.Agent = policy.HostOf(r.Host), &a.Agent
		o.Recorded, o.Remote = recordedClientIP(cv.vars, r), r.RemoteAddr
		o.Forwarded, o.TrustedProxy = forwarding(r, cv.vars)
		o.Block = h.scopeFor(r).key
		h.pipe.Fetched(r.Context(), &o.Judgement)
		h.publishJudged(r, &o)
	}
	if h.serveEnforced {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return h.writeEnforced(w, r)
		}
		return next.ServeHTTP(w, r)
	}
	if r.Method != http.MethodGet || r.Header.Get("Range") != "" {
		return next.ServeHTTP(w, r)
	}
	hw := &hashWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, h: sha256.New(), limit: enforce.MaxSize + 1}
	err := next.ServeHTTP(hw, r)
	if err != nil || hw.status != http.StatusOK || !hw.identity {
		return err
	}
	id := hex.EncodeToString(hw.h.Sum(nil)[:6])
	if cur := h.rules.Lookup(r, policy.HostOf(r.Host)).Current(); cur == nil || cur.ID != id {
		if h.Source == "site" {
			h.rules.Prompt(r, policy.HostOf(r.Host))
		} else {
			h.warnf("robots: the site's /robots.txt differs from the rules enforced (robots_txt pass): crawlers that follow it may be refused",
				zap.String("source", h.Source), zap.String("served_version", id))
		}
	}
	return nil
}

// writeEnforced answers /robots.txt with the text of the version enforced.
func (h *Handler) writeEnforced(w http.ResponseWriter, r *http.Request) error {
	snap := h.rules.Lookup(r, policy.HostOf(r.Host))
	v := snap.Current()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if v == nil {
		// Nothing could be read yet: what RFC 9309 §2.3.1.4 calls
		// unreachable, so crawlers come back.
		hdr.Set("Retry-After", policy.RetryAfterSeconds(sites.RetryAfterError))
		hdr.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		return nil
	}
	body := snap.Body()
	if len(body) > enforce.MaxSize {
		body = body[:enforce.MaxSize]
	}
	hdr.Set("ETag", `"`+v.ID+`"`)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, `"`+v.ID+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(body); err != nil {
		return caddyhttp.Error(http.StatusInternalServerError, fmt.Errorf("robots: writing robots.txt: %w", err))
	}
	return nil
}

// hashWriter hashes the first limit bytes of a /robots.txt response body
// while passing it through unchanged; it keeps no copy.
type hashWriter struct {
	*caddyhttp.ResponseWriterWrapper
	h        hash.Hash
	limit    int
	n        int
	status   int
	identity bool
}

func (t *hashWriter) WriteHeader(code int) {
	if t.status == 0 && code >= 200 {
		t.status = code
		ce := t.Header().Get("Content-Encoding")
		t.identity = ce == "" || strings.EqualFold(ce, "identity")
	}
	t.ResponseWriterWrapper.WriteHeader(code)
}

func (t *hashWriter) Write(p []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	if room := t.limit - t.n; room > 0 {
		q := p[:min(len(p), room)]
		t.h.Write(q)
		t.n += len(q)
	}
	return t.ResponseWriterWrapper.Write(p)
}

// ReadFrom keeps io.Copy going through Write, so the hash sees the body.
func (t *hashWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(writerOnly{t}, r)
}

// writerOnly hides every method but Write, so io.Copy cannot bypass it.
type writerOnly struct{ io.Writer }

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
