package caddyrobots

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// POST /robots/check: the decision a request would get now, from the live
// configuration and state, without counting anything. It finds the handler
// the way the server would route the request (the server listening on the
// URL's port, its routes' matchers), and calls the same decision as the
// handler, reading the throttle and strike state without writing it.

// checkRequest is the body of POST /robots/check.
type checkRequest struct {
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
}

// checkForm is one form of the target that was judged.
type checkForm struct {
	Form   string `json:"form"`
	Source string `json:"source"`
}

// checkAnswer says which handler and site answered a check.
type checkAnswer struct {
	Handler int `json:"handler"`
	placement
	Site string `json:"site"`
	// Source is the handler's robots.txt source (site, file, inline).
	Source string `json:"source"`
}

// checkResponse is the answer of POST /robots/check.
type checkResponse struct {
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
	Forms    []checkForm `json:"forms,omitempty"`
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
	Mode    string `json:"mode"`
	Handler int    `json:"handler"`
	// AnsweredBy is the handler and site that decided.
	AnsweredBy checkAnswer `json:"answered_by"`
}

func (a *adminAPI) serveCheck(w http.ResponseWriter, r *http.Request) error {
	var req checkRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, adminMaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: check: decoding the request body: %w", err)}
	}
	res, err := checkRequestNow(r.Context(), handlers(), httpApp(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, res)
}

// checkRequestNow judges req with the live configuration and state without
// counting anything: no strike, no throttle budget spent, no crawler
// statistics. For source site, a host the handler has not loaded yet is
// loaded now, as a crawler's first visit would.
func checkRequestNow(ctx context.Context, hs []*Handler, app *caddyhttp.App, req checkRequest) (checkResponse, error) {
	bad := func(format string, args ...any) error {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: check: "+format, args...)}
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return checkResponse{}, bad("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return checkResponse{}, bad("url %q must be an absolute http or https URL", req.URL)
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(req.IP))
	if err != nil {
		return checkResponse{}, bad("ip %q: %w", req.IP, err)
	}
	r, err := checkHTTPRequest(ctx, req, u, ip.Unmap())
	if err != nil {
		return checkResponse{}, bad("%w", err)
	}
	h, ans, err := checkHandler(hs, app, req.Handler, u, r)
	if err != nil {
		return checkResponse{}, err
	}
	if h.rules != nil && h.rules.srv.Load() == nil && h.Source == "site" {
		return checkResponse{}, caddy.APIError{HTTPStatus: http.StatusConflict,
			Err: errors.New("robots: check: the server this handler loads robots.txt through is not known (it is not in the running config's routes, and it served no request yet)")}
	}
	if srv := h.rules.srv.Load(); srv != nil {
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.ServerCtxKey, srv))
	}
	res := checkResponse{Mode: h.Mode, Handler: ans.Handler, AnsweredBy: ans}
	o, crawler, passed := h.judgeDry(r, ip.Unmap())
	res.Crawler = crawler
	if o == nil {
		res.Decision, res.Reason = policy.Allow.String(), passed
		return res, nil
	}
	fillCheckResponse(&res, o)
	return res, nil
}

// checkHTTPRequest builds the request a client would send for req.
func checkHTTPRequest(ctx context.Context, req checkRequest, u *url.URL, ip netip.Addr) (*http.Request, error) {
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
	vars := map[string]any{caddyhttp.ClientIPVarKey: ip.String()}
	return r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars)), nil
}

// checkHandler returns the handler a check concerns and says where it sits:
// the one given by index, else the one the server listening on the URL's
// port routes the request to. A check that reaches no handler is refused
// with the list of handlers.
func checkHandler(hs []*Handler, app *caddyhttp.App, index *int, u *url.URL, r *http.Request) (*Handler, checkAnswer, error) {
	if len(hs) == 0 {
		return nil, checkAnswer{}, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("robots: no robots handler is running")}
	}
	places := placements(app)
	answer := func(i int, h *Handler) checkAnswer {
		p := places[h]
		return checkAnswer{Handler: i, placement: p, Site: p.site(), Source: h.Source}
	}
	if index != nil {
		if *index < 0 || *index >= len(hs) {
			return nil, checkAnswer{}, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: no handler %d (there are %d; see /robots/status)", *index, len(hs))}
		}
		return hs[*index], answer(*index, hs[*index]), nil
	}
	if app == nil && len(hs) == 1 {
		// Outside a running Caddy (no HTTP app to route through): the
		// only handler.
		return hs[0], answer(0, hs[0]), nil
	}
	if h, srv, p, ok := locate(app, urlPort(u.Scheme, u.Host), r); ok {
		for i, x := range hs {
			if x == h {
				if h.rules != nil {
					h.rules.learnServer(srv)
				}
				a := answer(i, h)
				a.placement, a.Site = p, p.site()
				return h, a, nil
			}
		}
	}
	var list []string
	for i, h := range hs {
		p, ok := places[h]
		if !ok {
			list = append(list, fmt.Sprintf("%d: not in the running config", i))
			continue
		}
		list = append(list, fmt.Sprintf("%d: server %s (%s), site %s", i, p.Server, strings.Join(p.Listen, " "), p.site()))
	}
	return nil, checkAnswer{}, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf(
		"robots: check: no robots handler runs for %s (no server listens on port %d, or its routes reach no robots handler for this request); handlers: %s; or pass \"handler\": <index>",
		u.Redacted(), urlPort(u.Scheme, u.Host), strings.Join(list, "; "))}
}

// fillCheckResponse renders an outcome as the check's JSON.
func fillCheckResponse(res *checkResponse, o *outcome) {
	as := &o.Assessment
	res.Decision = o.action.String()
	res.Verdict = o.verdict.String()
	res.Token = o.tokenName()
	res.Reason = o.reason.String()
	if o.decision.Group != nil {
		res.Group = o.decision.Group.String()
	}
	if rule := o.decision.Rule; rule != nil {
		res.Rule = rule.String()
		res.Line = rule.Line
	}
	if o.version != nil {
		res.Version = o.version.ID
	}
	for i, f := range o.Target.Forms() {
		res.Forms = append(res.Forms, checkForm{Form: f, Source: o.Target.Source(i).String()})
	}
	res.JudgedAs = o.form()
	res.Strike, res.NoStrike = as.Strike, as.NoStrike
	if as.Reason == policy.Preference {
		res.Preference = as.Preference.String()
	}
	if as.Interval > 0 {
		res.CrawlDelaySeconds = as.Interval.Seconds()
	}
	if o.action == policy.Allow {
		switch {
		case o.decision.Group == nil:
			res.Reason = "no group applies"
		case o.decision.Rule != nil:
			res.Reason = "allowed by rule"
		default:
			res.Reason = "no rule disallows"
		}
		return
	}
	res.Message = strings.TrimSpace(o.message())
	if o.retryAfter > 0 {
		res.RetryAfterSeconds = o.retryAfter.Seconds()
	}
}
