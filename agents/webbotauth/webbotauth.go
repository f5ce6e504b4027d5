// Package webbotauth verifies requests signed by automated agents with HTTP
// Message Signatures (RFC 9421) as profiled by the IETF Web Bot Auth working
// group in draft-ietf-webbotauth-httpsig-protocol-00 (the revision followed,
// including its optional "type" parameter on Signature-Agent members:
// "directory", the default, and "jwks_uri"). Where the working group's later
// editor's copy (github.com/webbotauth/draft-ietf-webbotauth-httpsig-protocol,
// October 2026) differs, the newer reading is also accepted: a Signature-Agent
// value with a path other than the well-known one is fetched as a JWK Set
// directly. The Ed25519 test vectors of both, and RFC 9421 Appendix B.2.6, are
// part of the tests.
//
// Agents such as OpenAI's ChatGPT agent and Google's Google-Agent send an
// ordinary browser User-Agent and sign their requests instead. A signed
// request carries three header fields:
//
//	Signature-Agent: sig1="https://chatgpt.com"
//	Signature-Input: sig1=("@authority" "@method" "@path" "signature-agent";key="sig1");created=1700000000;expires=1700000300;keyid="…";tag="web-bot-auth"
//	Signature: sig1=:…:
//
// The Signature-Agent member names the agent's origin; its public keys are
// published as a JWK Set at the origin's WellKnownPath. Verify picks the
// signature tagged "web-bot-auth", checks its parameters (keyid, created,
// expires, at most a day apart, alg ed25519 if given), checks that it covers
// @authority (or @target-uri) and the Signature-Agent member it relies on,
// rebuilds the RFC 9421 signature base, looks the key up by (directory,
// keyid) and verifies the Ed25519 signature with crypto/ed25519. When the
// signature covers content-digest, the field is checked against the body
// (RFC 9530), so a captured request cannot be replayed with another body.
//
// Four outcomes are kept apart: Verified (the signature holds, under a key
// the agent's directory publishes), Invalid (a web-bot-auth signature is
// present and fails), Unsigned (no web-bot-auth signature), and Unknown (the
// directory is not fetched yet or could not be fetched: proof of nothing).
// Directory fetches run in the background (see Directory), so a request is
// never held up longer than Config.MaxWait.
//
// The package imports nothing of Caddy.
package webbotauth

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Tag is the value of the "tag" signature parameter that marks a Web Bot
// Auth signature.
const Tag = "web-bot-auth"

// maxSignatures bounds how many web-bot-auth signatures of one request are
// examined.
const maxSignatures = 4

// Outcome is the verdict on a request's Web Bot Auth signature.
type Outcome uint8

// The outcomes. Only Verified attributes the request to an agent; Unknown
// says nothing about the sender, neither good nor bad.
const (
	// Unsigned: the request carries no web-bot-auth signature.
	Unsigned Outcome = iota
	// Unknown: a web-bot-auth signature is present but could not be checked
	// yet: the agent's key directory is not fetched (a fetch has been
	// started), could not be fetched, or uses a mechanism or key type this
	// package does not support.
	Unknown
	// Invalid: a web-bot-auth signature is present and fails: bad
	// signature, expired, not yet valid, key not in the agent's directory,
	// a required component not covered, malformed parameters.
	Invalid
	// Verified: the signature holds under a key published by the agent's
	// directory.
	Verified
)

// String returns "unsigned", "unknown", "invalid" or "verified".
func (o Outcome) String() string {
	switch o {
	case Unknown:
		return "unknown"
	case Invalid:
		return "invalid"
	case Verified:
		return "verified"
	}
	return "unsigned"
}

// Result is the outcome of Verify.
type Result struct {
	// Outcome is the verdict.
	Outcome Outcome
	// Agent is the agent's identifier: the origin named by its
	// Signature-Agent member ("https://chatgpt.com"), or the JWK Set URL
	// (without query) for members that name one. Unless Outcome is
	// Verified it is only what the request claims, and must not be
	// trusted.
	Agent string
	// KeyID is the signature's keyid parameter (the key's RFC 7638
	// thumbprint).
	KeyID string
	// Label is the signature's label in Signature-Input.
	Label string
	// Token is the robots.txt product token of a Verified agent known to
	// the catalogue (KnownAgents, Config.Agents); empty otherwise.
	Token string
	// Operator is the operator of a Verified agent known to the built-in
	// catalogue; empty otherwise.
	Operator string
	// Reason says why the outcome is Invalid or Unknown.
	Reason string
}

// Config configures a Verifier (and its Directory). Zero values take the
// documented defaults.
type Config struct {
	// Skew is the clock skew tolerated on created and expires (and on the
	// nbf/exp of directory keys). Default 60 s.
	Skew time.Duration
	// MaxLifetime is the longest accepted expires-created window. Default
	// 24 h, as the draft recommends.
	MaxLifetime time.Duration
	// MaxWait is how long Verify may wait for the first fetch of a
	// directory before answering Unknown; the request's context can cut it
	// shorter. Default 0: never wait, the fetch goes on in the background.
	MaxWait time.Duration
	// AllowOrigins lists agent origins ("https://agent.internal:8443")
	// whose directories may be fetched although they resolve to private,
	// loopback or otherwise non-public addresses, and over plain http. For
	// tests and private deployments; empty by default.
	AllowOrigins []string
	// Agents adds or overrides catalogue entries: agent origin → robots.txt
	// product token reported in Result.Token.
	Agents map[string]string
	// Directories fixes where an agent's keys are fetched: agent origin →
	// the key directory URL the operator wrote (an origin means its
	// WellKnownPath). A request whose Signature-Agent names any other URL
	// of that origin is Invalid, and nothing is fetched for it. Agents of
	// the built-in catalogue are fixed to their WellKnownPath, and so is
	// every origin in Agents or AllowOrigins that has no entry here.
	Directories map[string]string
	// FetchTimeout bounds one directory fetch, connection to last byte.
	// Default 5 s.
	FetchTimeout time.Duration
	// MaxDirectoryBytes caps a directory's body after content decoding.
	// Default 64 KiB.
	MaxDirectoryBytes int64
	// MaxDirectories caps the number of cached directories. Default 1024.
	MaxDirectories int
	// MaxKeysPerDirectory caps the keys read from one directory. Default 32.
	MaxKeysPerDirectory int
	// MaxConcurrentFetches caps directory fetches running at once.
	// Default 8.
	MaxConcurrentFetches int
	// MinTTL and MaxTTL bound the freshness lifetime taken from a
	// directory's Cache-Control max-age or Expires. Defaults 5 min and 24 h.
	MinTTL, MaxTTL time.Duration
	// DefaultTTL is the freshness lifetime of a directory that sends no
	// caching headers. Default 1 h.
	DefaultTTL time.Duration
	// MaxStale is how long past its freshness a cached directory is still
	// used while it cannot be refreshed (a failed refresh is no evidence).
	// Default 24 h.
	MaxStale time.Duration
	// NegativeTTL is how long a failed fetch is remembered before the next
	// attempt. Default 1 min; capped at 5 min.
	NegativeTTL time.Duration
	// RootCAs, if set, replaces the system roots when verifying directory
	// servers' certificates (tests, private PKI).
	RootCAs *x509.CertPool
	// MaxBodyBytes caps the request body read to check a covered
	// Content-Digest field (RFC 9530) against it; a larger body leaves
	// the signature Unknown. Default 1 MiB.
	MaxBodyBytes int64
	// UserAgent is sent on directory fetches. Default
	// "caddy-robots-webbotauth/1 (+https://github.com/caddyrobots/caddy-robots)".
	UserAgent string
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Skew, 60*time.Second)
	def(&c.MaxLifetime, 24*time.Hour)
	def(&c.FetchTimeout, 5*time.Second)
	def(&c.MinTTL, 5*time.Minute)
	def(&c.MaxTTL, 24*time.Hour)
	def(&c.DefaultTTL, time.Hour)
	def(&c.MaxStale, 24*time.Hour)
	def(&c.NegativeTTL, time.Minute)
	c.NegativeTTL = min(c.NegativeTTL, maxNegativeTTL)
	c.MinTTL = min(c.MinTTL, c.MaxTTL)
	c.DefaultTTL = min(max(c.DefaultTTL, c.MinTTL), c.MaxTTL)
	if c.MaxWait < 0 {
		c.MaxWait = 0
	}
	if c.MaxDirectoryBytes <= 0 {
		c.MaxDirectoryBytes = 64 << 10
	}
	if c.MaxDirectories <= 0 {
		c.MaxDirectories = 1024
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxKeysPerDirectory <= 0 {
		c.MaxKeysPerDirectory = 32
	}
	if c.MaxConcurrentFetches <= 0 {
		c.MaxConcurrentFetches = 8
	}
	if c.UserAgent == "" {
		c.UserAgent = "caddy-robots-webbotauth/1 (+https://github.com/caddyrobots/caddy-robots)"
	}
	return c
}

// Verifier checks Web Bot Auth signatures. It is safe for concurrent use;
// Close stops its background directory fetches.
type Verifier struct {
	cfg     Config
	dir     *Directory
	allowed map[string]struct{}
	agents  map[string]KnownAgent
	// dirs is the one directory URL of each known or configured agent.
	dirs map[string]string
}

// NewVerifier returns a Verifier configured by cfg. It fails when an entry
// of cfg.AllowOrigins or cfg.Agents is not an http(s) origin.
func NewVerifier(cfg Config) (*Verifier, error) {
	cfg = cfg.withDefaults()
	v := &Verifier{
		cfg:     cfg,
		allowed: make(map[string]struct{}, len(cfg.AllowOrigins)),
		agents:  make(map[string]KnownAgent, len(knownAgents)+len(cfg.Agents)),
		dirs:    map[string]string{},
	}
	for _, o := range cfg.AllowOrigins {
		n, err := NormaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("webbotauth: AllowOrigins: %w", err)
		}
		v.allowed[n] = struct{}{}
	}
	for _, a := range knownAgents {
		v.agents[a.Origin] = a
	}
	for o, token := range cfg.Agents {
		n, err := NormaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("webbotauth: Agents: %w", err)
		}
		if strings.TrimSpace(token) == "" {
			return nil, fmt.Errorf("webbotauth: Agents: empty token for %s", n)
		}
		a := v.agents[n]
		a.Origin, a.Token = n, token
		v.agents[n] = a
	}
	for o := range v.allowed {
		v.dirs[o] = o + WellKnownPath
	}
	for o := range v.agents {
		v.dirs[o] = o + WellKnownPath
	}
	for o, u := range cfg.Directories {
		n, err := NormaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("webbotauth: Directories: %w", err)
		}
		ref, err := resolveAgent(u, nil, func(string) bool { return true })
		if err != nil || ref.origin != n {
			return nil, fmt.Errorf("webbotauth: Directories: %q is not a URL of %s", u, n)
		}
		v.dirs[n] = ref.fetchURL
	}
	v.dir = newDirectory(cfg)
	return v, nil
}

// Close stops background directory fetches and waits for them to end.
func (v *Verifier) Close() { v.dir.Close() }

// Directory returns the verifier's cache of agents' key directories (for
// its size, in metrics).
func (v *Verifier) Directory() *Directory { return v.dir }

// isAllowed reports whether origin is in Config.AllowOrigins.
func (v *Verifier) isAllowed(origin string) bool {
	_, ok := v.allowed[origin]
	return ok
}

// Verify checks the Web Bot Auth signature of r at time now. It never blocks
// longer than Config.MaxWait (or ctx, whichever ends first): a request whose
// agent directory is not cached yet starts the fetch in the background and
// gets Unknown.
//
// When a request carries several web-bot-auth signatures (at most four are
// examined), the first that verifies wins; otherwise an Unknown outcome is
// preferred to an Invalid one, since it may still verify later.
//
// A signature that holds and covers the content-digest field verifies only
// if the field matches the body (RFC 9530, sha-256 or sha-512): Verify
// then reads the body, at most Config.MaxBodyBytes (a larger body, a body
// that cannot be read, or a field with neither algorithm leaves the
// outcome Unknown; a digest that does not match makes it Invalid), and
// replaces r.Body with one that yields the whole original body, so the
// handlers that follow still receive it. Without content-digest among the
// covered components, Verified says nothing about the body.
func (v *Verifier) Verify(ctx context.Context, r *http.Request, now time.Time) Result {
	if ctx == nil {
		ctx = context.Background()
	}
	inputs := r.Header.Values("Signature-Input")
	if len(inputs) == 0 {
		return Result{Outcome: Unsigned}
	}
	dict, err := httpsfv.UnmarshalDictionary(inputs)
	if err != nil {
		if strings.Contains(strings.Join(inputs, ","), Tag) {
			return Result{Outcome: Invalid, Reason: "malformed Signature-Input: " + err.Error()}
		}
		return Result{Outcome: Unsigned}
	}
	var best *Result
	var body bodyState // read at most once, for all the signatures
	n := 0
	for _, label := range dict.Names() {
		m, _ := dict.Get(label)
		il, ok := m.(httpsfv.InnerList)
		if !ok || il.Params == nil {
			continue
		}
		if tag, _ := il.Params.Get("tag"); tag != Tag {
			continue
		}
		if n++; n > maxSignatures {
			break
		}
		res := v.verifyOne(ctx, r, now, label, il, &body)
		if res.Outcome == Verified {
			return res
		}
		if best == nil || (best.Outcome == Invalid && res.Outcome == Unknown) {
			best = &res
		}
	}
	if best == nil {
		return Result{Outcome: Unsigned}
	}
	return *best
}

// verifyOne checks one web-bot-auth signature. Cheap checks come first, and
// the directory is consulted only for a well-formed signature, so junk never
// prompts a fetch.
func (v *Verifier) verifyOne(ctx context.Context, r *http.Request, now time.Time, label string, il httpsfv.InnerList, body *bodyState) Result {
	res := Result{Outcome: Invalid, Label: label}
	invalid := func(format string, args ...any) Result {
		res.Outcome, res.Reason = Invalid, fmt.Sprintf(format, args...)
		return res
	}
	p := il.Params
	keyID, _ := paramString(p, "keyid")
	if keyID == "" {
		return invalid("keyid parameter missing")
	}
	res.KeyID = keyID
	if err := v.checkParams(il, now); err != nil {
		return invalid("%v", err)
	}
	ref, err := v.signatureAgent(r, il)
	if err != nil {
		var u unknownAgent
		if errors.As(err, &u) {
			res.Outcome, res.Reason = Unknown, err.Error()
			return res
		}
		return invalid("%v", err)
	}
	res.Agent = ref.id
	sig, err := signatureValue(r, label)
	if err != nil {
		return invalid("%v", err)
	}
	base, err := signatureBase(r, il)
	if err != nil {
		return invalid("%v", err)
	}

	pub, status, reason := v.dir.lookup(ctx, ref.fetchURL, keyID, now, v.isAllowed(ref.origin), v.cfg.MaxWait)
	switch status {
	case keyPending, keyUnreachable, keyUnsupported:
		res.Outcome, res.Reason = Unknown, reason
		return res
	case keyMissing, keyInactive:
		return invalid("%s", reason)
	}
	if !ed25519.Verify(pub, base, sig) {
		return invalid("signature does not verify under key %s", keyID)
	}
	// The signature holds over the Content-Digest field; that attests the
	// body only if the field matches it.
	if covers(il.Items, "content-digest") {
		if err := checkDigest(r, body, v.cfg.MaxBodyBytes); err != nil {
			if errors.Is(err, errDigestUnchecked) {
				res.Outcome, res.Reason = Unknown, err.Error()
				return res
			}
			return invalid("%v", err)
		}
	}
	res.Outcome = Verified
	if a, ok := v.agents[ref.id]; ok {
		res.Token, res.Operator = a.Token, a.Operator
	}
	return res
}

// checkParams checks the signature's parameters other than keyid: the
// algorithm, a validity window that holds at now and is not too long, and
// what it covers.
func (v *Verifier) checkParams(il httpsfv.InnerList, now time.Time) error {
	p := il.Params
	if alg, ok := p.Get("alg"); ok && alg != "ed25519" {
		return fmt.Errorf("alg %v is not ed25519", alg)
	}
	created, okC := paramInt(p, "created")
	expires, okE := paramInt(p, "expires")
	switch {
	case !okC:
		return errors.New("created parameter missing")
	case !okE:
		return errors.New("expires parameter missing")
	case expires <= created:
		return fmt.Errorf("expires (%d) is not after created (%d)", expires, created)
	case expires-created > int64(v.cfg.MaxLifetime/time.Second):
		return fmt.Errorf("validity window %ds exceeds %s", expires-created, v.cfg.MaxLifetime)
	}
	skew := int64(v.cfg.Skew / time.Second)
	if now.Unix()+skew < created {
		return fmt.Errorf("not yet valid: created %d is in the future", created)
	}
	if now.Unix()-skew > expires {
		return fmt.Errorf("expired at %d", expires)
	}
	if !covers(il.Items, "@authority") && !covers(il.Items, "@target-uri") {
		return errors.New("signature covers neither @authority nor @target-uri")
	}
	return nil
}

// unknownAgent is why a signature's agent cannot be resolved that leaves
// its outcome Unknown rather than Invalid: nothing says the signer lied.
type unknownAgent struct{ reason string }

func (u unknownAgent) Error() string { return u.reason }

// signatureAgent resolves the Signature-Agent member the signature covers
// to the agent whose directory holds the key. An unknownAgent error leaves
// the outcome Unknown; any other makes it Invalid.
func (v *Verifier) signatureAgent(r *http.Request, il httpsfv.InnerList) (agentRef, error) {
	agentHdr := parseSignatureAgent(r.Header.Values("Signature-Agent"))
	if !agentHdr.present {
		return agentRef{}, unknownAgent{"no Signature-Agent header: no key directory to resolve"}
	}
	if agentHdr.err != nil {
		return agentRef{}, agentHdr.err
	}
	value, params, ok, err := agentHdr.memberFor(il.Items)
	if err != nil {
		return agentRef{}, err
	}
	if !ok {
		return agentRef{}, errors.New("signature does not cover the Signature-Agent header")
	}
	ref, err := resolveAgent(value, params, v.isAllowed)
	if err != nil {
		if errors.Is(err, errUnsupportedAgent) {
			return agentRef{}, unknownAgent{err.Error()}
		}
		return agentRef{}, err
	}
	// The requester does not choose what this server fetches: a known or
	// configured agent's keys come from its one directory, and an unknown
	// agent's only from its origin's well-known path. The identity is the
	// agent (its origin), whatever URL the request named.
	if fixed, ok := v.dirs[ref.origin]; ok {
		if ref.fetchURL != fixed {
			return agentRef{}, fmt.Errorf("Signature-Agent names %s, but the key directory of %s is %s", ref.fetchURL, ref.origin, fixed)
		}
	} else if ref.fetchURL != ref.origin+WellKnownPath {
		return agentRef{}, unknownAgent{"an unknown agent's keys are only read from " + ref.origin + WellKnownPath + ", not " + ref.fetchURL}
	}
	ref.id = ref.origin
	return ref, nil
}

// signatureValue returns the signature labelled label in the Signature
// header.
func signatureValue(r *http.Request, label string) ([]byte, error) {
	sigs, err := httpsfv.UnmarshalDictionary(r.Header.Values("Signature"))
	if err != nil {
		return nil, fmt.Errorf("malformed Signature header: %v", err)
	}
	m, ok := sigs.Get(label)
	if !ok {
		return nil, fmt.Errorf("no Signature member %q", label)
	}
	item, _ := m.(httpsfv.Item)
	sig, _ := item.Value.([]byte)
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("signature %q is not a %d-byte byte sequence", label, ed25519.SignatureSize)
	}
	return sig, nil
}

func covers(items []httpsfv.Item, name string) bool {
	for _, c := range items {
		if s, _ := c.Value.(string); s == name {
			return true
		}
	}
	return false
}

func paramString(p *httpsfv.Params, name string) (string, bool) {
	v, ok := p.Get(name)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func paramInt(p *httpsfv.Params, name string) (int64, bool) {
	v, ok := p.Get(name)
	if !ok {
		return 0, false
	}
	i, ok := v.(int64)
	return i, ok
}
