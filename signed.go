package caddyrobots

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/webbotauth"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Web Bot Auth: agents that sign their requests (RFC 9421 HTTP Message
// Signatures, as the IETF webbotauth drafts profile them) are verified by
// their signature, whatever User-Agent and address they use. OpenAI's agent
// and Google's send a browser User-Agent and sign instead.
//
//   - Verified: the request is a bot's, judged by the robots.txt group of
//     the agent's token (the built-in catalogue, or verify {
//     signature_agent <url> token <t> }), or by "*" when none is known; its
//     throttle budget and ban state are the signing agent's own.
//   - Invalid (a web-bot-auth signature that fails, or a covered
//     Content-Digest that does not match the body): refused as spoofed.
//   - Unsigned, or Unknown (the agent's key directory is not fetched yet or
//     cannot be): judged by the User-Agent as always.

// SignatureAgentConfig names an agent whose signed requests are verified
// with its own key directory.
type SignatureAgentConfig struct {
	// URL is the agent's Signature-Agent origin (https://agent.example) or
	// key-set URL. Configured agents' directories may be on private
	// addresses, and on plain http for loopback tests.
	URL string `json:"url"`
	// Token is the robots.txt product token the agent's requests are judged
	// by; empty: the built-in catalogue's, else the "*" group.
	Token string `json:"token,omitempty"`
}

// sigPool shares one Web Bot Auth verifier (and its key-directory cache)
// per configuration across handlers and reloads.
var sigPool = caddy.NewUsagePool()

type pooledSig struct{ *webbotauth.Verifier }

func (p pooledSig) Destruct() error { p.Close(); return nil }

// provisionSignatures builds (or shares) the verifier for v.
func (h *Handler) provisionSignatures(v *VerifyConfig) error {
	// A first-time signer waits at most 200 ms for its key directory, so
	// its first request already gets a verdict; later ones use the cache.
	cfg := webbotauth.Config{Agents: map[string]string{}, MaxWait: 200 * time.Millisecond}
	if v != nil {
		cfg.Skew = time.Duration(v.SignatureSkew)
		for _, a := range v.SignatureAgents {
			origin, err := webbotauth.NormaliseOrigin(a.URL)
			if err != nil {
				return fmt.Errorf("robots: verify: signature_agent %q: %w", a.URL, err)
			}
			cfg.AllowOrigins = append(cfg.AllowOrigins, origin)
			if a.Token != "" {
				cfg.Agents[origin] = a.Token
			}
			// The operator's URL is the agent's one key directory: a
			// request cannot make this server fetch another.
			if cfg.Directories == nil {
				cfg.Directories = map[string]string{}
			}
			cfg.Directories[origin] = strings.TrimSpace(a.URL)
		}
	}
	key, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("robots: verify: signature config: %w", err)
	}
	val, _, err := sigPool.LoadOrNew(string(key), func() (caddy.Destructor, error) {
		sv, err := webbotauth.NewVerifier(cfg)
		if err != nil {
			return nil, fmt.Errorf("robots: verify: signatures: %w", err)
		}
		return pooledSig{sv}, nil
	})
	if err != nil {
		return err
	}
	h.sigKey, h.sig = string(key), val.(pooledSig).Verifier
	return nil
}

// releaseSignatures gives back the verifier taken in provisionSignatures.
func (h *Handler) releaseSignatures() error {
	if h.sigKey == "" {
		return nil
	}
	key := h.sigKey
	h.sigKey = ""
	if _, err := sigPool.Delete(key); err != nil {
		return fmt.Errorf("robots: releasing the signature verifier: %w", err)
	}
	return nil
}

// signedAgent verifies a request that carries a Signature-Input field. It
// returns the agent a Verified signature proves (with the signer's
// identity), an Invalid result to refuse, or neither (nil, "") to judge the
// request by its User-Agent.
func (h *Handler) signedAgent(r *http.Request) (a *agents.Shared, signer string, invalid *webbotauth.Result) {
	ar := asReceived(r)
	res := h.sig.Verify(r.Context(), ar, h.now())
	// Checking a covered Content-Digest reads the body and puts it back
	// on the request Verify was given: the next handler must get it.
	r.Body = ar.Body
	switch res.Outcome {
	case webbotauth.Verified:
	case webbotauth.Invalid:
		return nil, "", &res
	default:
		return nil, "", nil
	}
	var ag agents.Agent
	if res.Token != "" {
		// The catalogue knows the token's crawler: its purpose, category
		// and documented habits.
		ag = h.ident.IdentifyShared(res.Token).Agent
	}
	if !ag.Bot || res.Token == "" {
		ag = agents.Agent{Name: res.Agent, Category: agents.CategoryOther, Purpose: agents.PurposeOther}
		if res.Token != "" {
			ag.Name, ag.Tokens = res.Token, []string{res.Token}
		}
	}
	ag.Bot, ag.Known = true, true
	if res.Operator != "" {
		ag.Operator = res.Operator
	}
	ag.Profile.Verify = "" // the signature is the verification
	return agents.NewShared(ag), res.Agent, nil
}

// asReceived returns r with the URL and target the client sent (Caddy's
// copy of the original request): a signature covers @path, @query and
// @target-uri as the client signed them, not as the operator's routing
// (handle_path, rewrite) changed them ahead of this handler.
func asReceived(r *http.Request) *http.Request {
	or := originalRequest(r)
	if !or.ok || or.url == nil || r.URL == nil {
		return r
	}
	if or.url.Path == r.URL.Path && or.url.RawPath == r.URL.RawPath && or.url.RawQuery == r.URL.RawQuery && or.requestURI == r.RequestURI {
		return r
	}
	c := *r
	u := *or.url
	u.Scheme, u.Host = r.URL.Scheme, r.URL.Host
	c.URL, c.RequestURI = &u, or.requestURI
	return &c
}

// invalidSignature is the outcome of a request whose Web Bot Auth
// signature fails: refused as spoofed, never a strike.
func (h *Handler) invalidSignature(r *http.Request, res *webbotauth.Result) *outcome {
	a := agents.NewShared(agents.Agent{Bot: true, Name: res.Agent, Category: agents.CategoryOther, Purpose: agents.PurposeOther})
	o := outcome{published: published{agent: a, action: policy.Block, reason: policy.Spoofed, verdict: agents.Spoofed, token: policy.TokenNone}}
	cv := caddyValuesOf(r)
	o.read(r, cv.orig) // its target and host, for the log line and placeholders
	o.text = fmt.Sprintf("Refused: this request carries a Web Bot Auth signature for %s that does not verify (%s).\n", res.Agent, res.Reason)
	return h.publishOutcome(r, &cv, &o)
}
