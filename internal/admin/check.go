package admin

// POST /robots/check: the decision a request would get now, from the live
// configuration and state, without counting anything. This file reads the
// request and writes the answer; finding the handler the request reaches
// (through Caddy's routes) and judging it as that handler would is the
// root package's, behind Checker.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// maxCheckBody bounds the request body of POST /robots/check.
const maxCheckBody = 64 << 10

// CheckRequest is the body of POST /robots/check.
type CheckRequest struct {
	UserAgent string `json:"user_agent"`
	IP        string `json:"ip"`
	// URL is the absolute URL; its path and query are the target exactly
	// as a client would send it ("http://host//private/x" sends
	// "//private/x").
	URL string `json:"url"`
	// Method is the request's method; default GET.
	Method string `json:"method,omitempty"`
	// Headers are other request headers that bear on the decision
	// (X-Original-URL, X-Rewrite-URL, X-Forwarded-Prefix, Signature-Input).
	Headers map[string]string `json:"headers,omitempty"`
	// Handler picks a handler by its index in /robots/status, instead of
	// finding it from the URL.
	Handler *int `json:"handler,omitempty"`
	// TLSFingerprint is the client's JA4 ({http.robots.tls_fingerprint}).
	// A JA4 alone cannot tell a browser engine from a library (the tls
	// signal reads the whole ClientHello), so it decides nothing: the
	// answer's TLS says what a live handshake would.
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
}

// CheckForm is one form of the target that was judged.
type CheckForm struct {
	Form   string `json:"form"`
	Source string `json:"source"`
}

// Placement is where a handler sits in the running config.
type Placement struct {
	// Server is the server's name in the config ("srv0"); Listen its
	// addresses.
	Server string   `json:"server"`
	Listen []string `json:"listen"`
	// Hosts are the host patterns of the routes that lead to the handler,
	// outermost first; empty: every host (a catch-all site).
	Hosts []string `json:"hosts,omitempty"`
}

// CheckAnswer says which handler and site answered a check.
type CheckAnswer struct {
	Handler int `json:"handler"`
	Placement
	Site string `json:"site"`
	// Source is the handler's robots.txt source (site, file, inline).
	Source string `json:"source"`
}

// CheckResponse is the answer of POST /robots/check, and a line of
// `caddy robots check --requests`.
type CheckResponse struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	Crawler  string `json:"crawler,omitempty"`
	Verdict  string `json:"verdict,omitempty"`
	Token    string `json:"token,omitempty"`
	Group    string `json:"group,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Line     int    `json:"line,omitempty"`
	Version  string `json:"version,omitempty"`
	// Preference is the AI usage preference that refuses the request.
	Preference string `json:"preference,omitempty"`
	// Forms are the forms of the target judged; JudgedAs the one a rule or
	// preference refused, when it is not the target as sent.
	Forms    []CheckForm `json:"forms,omitempty"`
	JudgedAs string      `json:"judged_as,omitempty"`
	// Strike says whether the refusal would count as a strike; NoStrike
	// why not.
	Strike   bool   `json:"strike,omitempty"`
	NoStrike string `json:"no_strike,omitempty"`
	// RetryAfterSeconds is the wait a throttle, a ban or an unavailable
	// robots.txt imposes.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// CrawlDelaySeconds is the interval enforced between this crawler's
	// requests. The decision says whether this request would be throttled
	// now, given the crawler's recent requests (read, not spent).
	CrawlDelaySeconds float64 `json:"crawl_delay_seconds,omitempty"`
	// Message is the explanation a refused crawler would receive.
	Message string `json:"message,omitempty"`
	// TLS is what the request's tls_fingerprint tells
	// (policy.TLSFingerprintNote); empty without one.
	TLS     string `json:"tls,omitempty"`
	Mode    string `json:"mode"`
	Handler int    `json:"handler"`
	// AnsweredBy is the handler and site that decided.
	AnsweredBy CheckAnswer `json:"answered_by"`
}

// Checker is the root package's side of a check: it alone can find the
// handler a request reaches through Caddy's routes and judge the request
// as that handler would.
type Checker interface {
	// Check judges r, the request a client would send for u from ip, as
	// the handler it reaches would judge it now, reading the throttle and
	// strike state without writing it. handler, when not nil, picks the
	// handler by its index in /robots/status. An error is an Error when
	// no handler can answer.
	Check(r *http.Request, u *url.URL, ip netip.Addr, handler *int) (Checked, error)
}

// Checked is what a Checker found and judged.
type Checked struct {
	// Answer is the handler and site that decided; Mode the handler's.
	Answer CheckAnswer
	Mode   string
	// Crawler is the name of the crawler the User-Agent names, if any.
	Crawler string
	// Judgement is the judged request; nil when the request is not
	// judged, and Passed says why ("not a crawler", "exempt network").
	Judgement *pipeline.Judgement
	Passed    string
}

// serveCheck answers POST /robots/check.
func (a *API) serveCheck(w http.ResponseWriter, r *http.Request) error {
	var req CheckRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxCheckBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Error{http.StatusBadRequest, fmt.Errorf("robots: check: decoding the request body: %w", err)}
	}
	res, err := Check(r.Context(), a.Checker, req)
	if err != nil {
		return err
	}
	return WriteJSON(w, res)
}

// Check judges req with c, which answers with the live configuration and
// state without counting anything: no strike, no throttle budget spent, no
// crawler statistics.
func Check(ctx context.Context, c Checker, req CheckRequest) (CheckResponse, error) {
	bad := func(format string, args ...any) error {
		return Error{http.StatusBadRequest, fmt.Errorf("robots: check: "+format, args...)}
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return CheckResponse{}, bad("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return CheckResponse{}, bad("url %q must be an absolute http or https URL", req.URL)
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(req.IP))
	if err != nil {
		return CheckResponse{}, bad("ip %q: %w", req.IP, err)
	}
	ip = ip.Unmap()
	if req.TLSFingerprint != "" && !ja4.IsFingerprint(req.TLSFingerprint) {
		return CheckResponse{}, bad("tls_fingerprint %q is not a JA4 fingerprint", req.TLSFingerprint)
	}
	r, err := checkHTTPRequest(ctx, req, u, ip)
	if err != nil {
		return CheckResponse{}, bad("%w", err)
	}
	got, err := c.Check(r, u, ip, req.Handler)
	if err != nil {
		return CheckResponse{}, err
	}
	res := CheckResponse{Mode: got.Mode, Handler: got.Answer.Handler, AnsweredBy: got.Answer, Crawler: got.Crawler}
	if req.TLSFingerprint != "" {
		res.TLS = policy.TLSFingerprintNote(req.UserAgent, req.TLSFingerprint)
	}
	if got.Judgement == nil {
		res.Decision, res.Reason = policy.Allow.String(), got.Passed
		return res, nil
	}
	res.Fill(got.Judgement)
	return res, nil
}

// checkHTTPRequest builds the request a client would send for req.
func checkHTTPRequest(ctx context.Context, req CheckRequest, u *url.URL, ip netip.Addr) (*http.Request, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	// The target exactly as written in the URL: everything after the
	// authority, so that "http://h//private/x" sends "//private/x".
	target := "/"
	if rest, ok := strings.CutPrefix(req.URL, u.Scheme+"://"); ok {
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			target = rest[i:]
			if target[0] == '?' {
				target = "/" + target
			}
		}
	}
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target = target[:i]
	}
	r, err := http.NewRequestWithContext(ctx, method, u.Scheme+"://"+u.Host+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	r.RequestURI = target
	if pu, err := url.ParseRequestURI(target); err == nil {
		r.URL = pu
	} else {
		return nil, fmt.Errorf("target %q: Go's HTTP server refuses it before any handler (400): %w", target, err)
	}
	r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
	r.Host = u.Host
	r.RemoteAddr = net.JoinHostPort(ip.String(), "0")
	r.Header.Set("User-Agent", req.UserAgent)
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	if u.Scheme == "https" {
		r.TLS = &tls.ConnectionState{HandshakeComplete: true, ServerName: u.Hostname()}
	}
	return r, nil
}

// Fill renders a judged bot request as the check's answer: the decision,
// the rule and group, the forms judged, the strike and the waits.
func (res *CheckResponse) Fill(j *pipeline.Judgement) {
	as := &j.Assessment
	res.Decision = as.Action.String()
	res.Verdict = as.Verdict.String()
	res.Token = tokenName(j)
	res.Reason = as.Reason.String()
	if as.Decision.Group != nil {
		res.Group = as.Decision.Group.String()
	}
	if rule := as.Decision.Rule; rule != nil {
		res.Rule = rule.String()
		res.Line = rule.Line
	}
	if as.Version != nil {
		res.Version = as.Version.ID
	}
	for i, f := range j.Target.Forms() {
		res.Forms = append(res.Forms, CheckForm{Form: f, Source: j.Target.Source(i).String()})
	}
	res.JudgedAs = as.RefusedFormText(&j.Target)
	res.Strike, res.NoStrike = as.Strike, as.NoStrike
	if as.Reason == policy.Preference {
		res.Preference = as.Preference.String()
	}
	if as.Interval > 0 {
		res.CrawlDelaySeconds = as.Interval.Seconds()
	}
	if as.Action == policy.Allow {
		switch {
		case as.Decision.Group == nil:
			res.Reason = "no group applies"
		case as.Decision.Rule != nil:
			res.Reason = "allowed by rule"
		default:
			res.Reason = "no rule disallows"
		}
		return
	}
	facts := j.Facts()
	res.Message = strings.TrimSpace(policy.Explain(as, &facts, j.Host))
	if as.RetryAfter > 0 {
		res.RetryAfterSeconds = as.RetryAfter.Seconds()
	}
}

// tokenName is the token whose group was selected: "*" for the wildcard
// group, "" when none applies.
func tokenName(j *pipeline.Judgement) string {
	switch t := j.Assessment.Token; {
	case t == policy.TokenWildcard:
		return "*"
	case t < 0 || j.Client.Agent == nil || int(t) >= len(j.Client.Agent.Tokens):
		return ""
	default:
		return j.Client.Agent.Tokens[t]
	}
}
