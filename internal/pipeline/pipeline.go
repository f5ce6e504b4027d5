// Package pipeline is the I/O around the one decision of caddy-robots: it
// judges a bot's request by verifying the client's claim, reading the
// state kept for it, assessing it (policy.Assess) and writing the state the
// assessment asks for. The live handler, the admin API's check, `caddy
// robots check` and `caddy robots audit` all judge through it, so that
// none of them can drift from the others.
//
// What the pipeline does not do is everyone's own business: reading the
// request (the caller parses the target and says who the client claims to
// be), taking the site's robots.txt versions (the loader's), and publishing
// or answering (the caller reads the Judgement it returns).
//
// The package imports nothing of Caddy.
package pipeline

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Mode is how a judgement acts: in enforce mode a refusal is answered; in
// log mode it is only counted and logged, and the state it reads and writes
// is kept apart, so that what log mode would have done never carries over
// into enforce mode.
type Mode uint8

// The modes.
const (
	Enforce Mode = iota
	Log
)

// String is the mode's name, as the Caddyfile, logs and metrics spell it.
func (m Mode) String() string {
	if m == Log {
		return "log"
	}
	return "enforce"
}

// Verifier verifies a crawler's claim from the client's address
// (agents.Verifier does, with published IP lists and reverse DNS).
type Verifier interface {
	Verify(ctx context.Context, a agents.Agent, ip netip.Addr) agents.Verdict
}

// FetchLog keeps when each crawler was last seen fetching /robots.txt. A
// golang-lru Cache is one: Add reports whether it evicted an older entry.
type FetchLog interface {
	Get(id state.Identity) (time.Time, bool)
	Add(id state.Identity, at time.Time) (evicted bool)
}

// Config is what a Pipeline is built from: one per site block.
type Config struct {
	// Verifier verifies claims; nil: every claim stays Unverified.
	Verifier Verifier
	// Store keeps throttle, strike and ban state; nil: no state is read
	// or written.
	Store state.Store
	// Strikes is the strike policy (no strikes when its count is 0).
	Strikes state.StrikePolicy
	// Rotations recognises addresses that rotate names; nil: none.
	Rotations *state.Rotations
	// HostHops recognises clients that hop Hosts when the Crawl-delay
	// budget is per host (PacePerHost); nil: none.
	HostHops *state.Rotations
	// PacePerHost keeps a Crawl-delay budget per host (source site, where
	// each host has its own robots.txt) rather than per site block.
	PacePerHost bool
	// Fetched says when each crawler last fetched /robots.txt; nil: never.
	Fetched FetchLog
	// Options are the decision's options.
	Options policy.Options
	// TLSFingerprint returns the JA4 of the client's own TLS handshake
	// for a request ("" when there is none: plain HTTP, or a trusted
	// proxy's handshake), which is then its shape (policy.ClientShape);
	// nil: shapes are read from the request's headers alone.
	TLSFingerprint func(*http.Request) string
	// LoggedShape returns the shape of a client judged without its request
	// (Request.HTTP nil: a replayed log line) from what the line being
	// judged recorded, as policy.ClientShape computes it; nil: such a client
	// has shape 0. It is given nothing of the Judgement, which then stays
	// on the caller's stack.
	LoggedShape func() uint64
	// Now is the clock; RotationNow the (coarser) clock of Rotations.
	// Request.At overrides both.
	Now, RotationNow func() time.Time
}

// Pipeline judges bot requests for one site block. It is safe for
// concurrent use.
type Pipeline struct {
	cfg Config
	// banHint is the store when it can tell without a lookup that nobody
	// is banned (state.Memory).
	banHint interface{ MayHaveBans() bool }
}

// New builds the pipeline of a site block.
func New(cfg Config) *Pipeline {
	p := &Pipeline{cfg: cfg}
	p.banHint, _ = cfg.Store.(interface{ MayHaveBans() bool })
	return p
}

// Options are the decision's options.
func (p *Pipeline) Options() *policy.Options { return &p.cfg.Options }

// Request is a bot's request as its caller read it.
type Request struct {
	// Target is the request target as the client sent it, with its forms.
	Target policy.Target
	// Host is the site's host (policy.HostOf).
	Host string
	// Client is the claim: Agent, and Signer, Undeclared and RulesOnly
	// when they apply; Addr when the caller knows it (else it is parsed
	// from Recorded or Remote on first use). Judge sets the Verdict.
	Client policy.Client
	// Recorded is the client address as the server recorded it
	// (unparsed, "" when none); Remote the peer's address ("host:port").
	Recorded, Remote string
	// HTTP is the request itself, read only for its client's shape when
	// an unproven name of a rotating address is given its pool
	// (policy.ClientShape); nil when there is none (a replayed log line):
	// then the shape is Config.LoggedShape's.
	HTTP *http.Request
	// Forwarded is set when the request carries X-Forwarded-For or
	// Forwarded; TrustedProxy when the server took the client's address
	// from them (it trusts the peer as a proxy).
	Forwarded, TrustedProxy bool
	// Site holds the site's robots.txt versions (Versions, Unavailable);
	// Judge adds FetchedAt.
	Site policy.Site
	// Block is the state key of the site block (strikes, bans, rotation:
	// whatever Host the client sends); BlockDesc names it for people.
	Block, BlockDesc string
	// Mode is the judgement's mode.
	Mode Mode
	// DryRun reads the state without writing it: no strike recorded, no
	// throttle budget spent, no rotation noted; the throttle's answer is
	// what the next request would get.
	DryRun bool
	// Stateless judges the request on its own: no state read or written.
	Stateless bool
	// At is the time of the request; zero: the pipeline's clock, read
	// only when needed.
	At time.Time
}

// Judgement is a judged request: the request, the facts the decision read,
// the assessment, and what the caller publishes.
type Judgement struct {
	Request
	// Who is the identity the state is kept under (policy.Identify).
	Who policy.Who
	// Ban is the ban state read (Banned false when none, or not read).
	Ban state.BanResult
	// Assessment is the decision, completed by the throttle's answer.
	Assessment policy.Assessment

	// Struck is set when a strike was recorded: StrikeID is whose,
	// Strike the store's answer, StruckAt when.
	Struck   bool
	StrikeID state.Identity
	Strike   state.BanResult
	StruckAt time.Time
	// Retried is set for a throttled request that came back inside its
	// own Retry-After (not in a dry run).
	Retried bool
	// UntrustedProxy is set when the client's address is a private or
	// loopback peer forwarding for others that the server does not trust
	// (not reported in a dry run): rotation does not apply to it.
	UntrustedProxy bool
	// PrivateClaim is set when a verifiable crawler's claim came from an
	// address that cannot verify it (private, loopback, none).
	PrivateClaim bool

	addrRead bool
}

// Facts returns the facts the decision read, for policy.Explain.
func (j *Judgement) Facts() policy.Facts {
	return policy.Facts{Target: &j.Target, Client: &j.Client, Who: &j.Who, Site: &j.Site, Ban: &j.Ban}
}

// Addr is the client's address: Client.Addr, else parsed (once) from
// Recorded, else from Remote.
func (j *Judgement) Addr() netip.Addr {
	if !j.addrRead {
		j.addrRead = true
		if !j.Client.Addr.IsValid() {
			j.Client.Addr = ClientAddr(j.Recorded, j.Remote)
		}
	}
	return j.Client.Addr
}

// ClientAddr is the client's address: recorded (the address the server
// recorded after its trusted proxies) when it parses, else the host of
// remote ("host:port", or a bare address).
func ClientAddr(recorded, remote string) netip.Addr {
	if recorded != "" {
		if a, err := netip.ParseAddr(recorded); err == nil {
			return a.Unmap()
		}
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// Judge judges j's request: verify the claim, read the state, assess,
// write the state. The caller fills j.Request.
func (p *Pipeline) Judge(ctx context.Context, j *Judgement) {
	clk := clock{p: p, at: j.At}
	j.Client.Verdict = p.verify(ctx, j)
	j.Who = policy.Identify(&j.Client)
	if p.stateful(j) {
		p.noteRotation(j, &clk)
		p.readBan(ctx, j, &clk)
	}
	if len(j.Site.Versions) > 1 && p.cfg.Fetched != nil {
		j.Site.FetchedAt, _ = p.cfg.Fetched.Get(policy.FetchIdentity(j.Host, &j.Who, j.Addr()))
	}
	if p.cfg.Options.CaseInsensitive {
		// The target's forms as the site's server reads them: the
		// explanation shows the form that was judged.
		j.Target.FoldCase()
	}
	f := j.Facts()
	if policy.NeedsTime(len(j.Site.Versions), j.Ban.Banned) {
		f.Now = clk.get()
	}
	j.Assessment = policy.Assess(&f, &p.cfg.Options)
	if p.stateful(j) {
		p.writeState(ctx, j, &clk)
	}
	if j.Assessment.Refused() {
		j.Addr() // for the explanation and the log line
	}
}

// Fetched notes that j's client fetched /robots.txt (the request is
// always served; j.Target is not read): when, so that older versions stop
// earning it grace, and for an unverified name, as evidence it produced
// itself, which may earn it a budget of its own on an address that
// rotates names. It verifies the claim and sets j.Who.
func (p *Pipeline) Fetched(ctx context.Context, j *Judgement) {
	clk := clock{p: p, at: j.At}
	j.Client.Verdict = p.verify(ctx, j)
	j.Who = policy.Identify(&j.Client)
	if j.Stateless {
		return
	}
	if p.cfg.Fetched != nil {
		p.cfg.Fetched.Add(policy.FetchIdentity(j.Host, &j.Who, j.Addr()), clk.get())
	}
	if r := p.cfg.Rotations; r != nil && !j.Who.Verified && !p.behindUntrustedProxy(j) {
		r.Fetched(j.Block, j.Addr(), j.Recorded, j.Who.Name, clk.get())
	}
}

// stateful reports whether j's request reads and writes state.
func (p *Pipeline) stateful(j *Judgement) bool { return p.cfg.Store != nil && !j.Stateless }

// verify verifies the claim of j's client from its address: a signed agent
// is Verified by its signature; a crawler whose operator publishes no way
// to verify it stays Unverified.
func (p *Pipeline) verify(ctx context.Context, j *Judgement) agents.Verdict {
	c := &j.Client
	if c.Signer != "" {
		return agents.Verified
	}
	if c.Agent.Profile.Verify == "" {
		return agents.Unverified
	}
	ip := j.Addr()
	v := agents.Unverified
	if ip.IsValid() && p.cfg.Verifier != nil {
		v = p.cfg.Verifier.Verify(ctx, *c.Agent, ip)
	}
	if v == agents.Unverified && (!ip.IsValid() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast()) {
		j.PrivateClaim = true
	}
	return v
}

// noteRotation marks an unverified name that is unproven on an address
// seen presenting many names (Who.Rotating), and gives it the pool of its
// client's shape there (Who.Pool), unless the address is a proxy the
// server does not trust (every client behind it has its address). A name
// with a budget of its own never has its shape computed.
func (p *Pipeline) noteRotation(j *Judgement, clk *clock) {
	r := p.cfg.Rotations
	if r == nil || j.Who.Verified {
		return
	}
	now := clk.rotation()
	if r.Resident(j.Block, j.Recorded, j.Who.Name, now) || p.behindUntrustedProxy(j) {
		return
	}
	j.Who.Rotating = r.Note(j.Block, j.Addr(), j.Recorded, j.Who.Name, now, j.DryRun)
	if j.Who.Rotating {
		j.Who.Pool = r.Pool(j.Block, j.Addr(), p.shape(j), now, j.DryRun)
	}
}

// shape is the shape of j's client (policy.ClientShape): its request's,
// else what its log line recorded (LoggedShape), else 0.
func (p *Pipeline) shape(j *Judgement) uint64 {
	if j.HTTP == nil {
		if p.cfg.LoggedShape != nil {
			return p.cfg.LoggedShape()
		}
		return 0
	}
	fp := ""
	if p.cfg.TLSFingerprint != nil {
		fp = p.cfg.TLSFingerprint(j.HTTP)
	}
	return policy.ClientShape(j.HTTP.Header, j.HTTP.ProtoMajor, j.HTTP.ProtoMinor, fp)
}

// behindUntrustedProxy reports whether j comes from a private or loopback
// peer forwarding for others that the server does not trust, and notes it
// for the caller to report (not in a dry run).
func (p *Pipeline) behindUntrustedProxy(j *Judgement) bool {
	if !j.Forwarded || !policy.UntrustedProxy(j.Addr(), true, j.TrustedProxy) {
		return false
	}
	j.UntrustedProxy = !j.DryRun
	return true
}

// readBan reads the ban state of j's identity.
func (p *Pipeline) readBan(ctx context.Context, j *Judgement, clk *clock) {
	if p.cfg.Strikes.Strikes <= 0 || (p.banHint != nil && !p.banHint.MayHaveBans()) {
		return
	}
	j.Ban, _ = p.cfg.Store.Banned(ctx, policy.StrikeIdentity(p.banScope(j), &j.Who, j.Addr()), clk.get())
}

// banScope is the scope of j's strikes and bans: the site block's, kept
// apart in log mode.
func (p *Pipeline) banScope(j *Judgement) string {
	if j.Mode == Log {
		return "log|" + j.Block
	}
	return j.Block
}

// writeState records what the assessment asks for: a strike, and for a
// request that spends a throttle budget, the store's answer (dry run: the
// store's answer for the next request, read without spending).
func (p *Pipeline) writeState(ctx context.Context, j *Judgement, clk *clock) {
	as := &j.Assessment
	if as.Strike && !j.DryRun && p.cfg.Strikes.Strikes > 0 {
		// The ban, if this strike starts one, is seen from the next
		// request on; this one is refused by its rule either way.
		id := policy.StrikeIdentity(p.banScope(j), &j.Who, j.Addr())
		now := clk.get()
		res, err := p.cfg.Store.Strike(ctx, id, p.cfg.Strikes, now, j.strikeInfo())
		if err == nil {
			j.Struck, j.StrikeID, j.Strike, j.StruckAt = true, id, res, now
		}
	}
	if !as.Pace {
		return
	}
	res, err := p.pace(ctx, j, clk)
	if err != nil {
		return // fail open
	}
	j.Assessment = as.Throttled(res)
	j.Retried = j.Assessment.Retry && !j.DryRun
}

// strikeInfo describes the strike j counts, for the ban it may start: who,
// by which rule of which version, in which site block.
func (j *Judgement) strikeInfo() state.StrikeInfo {
	as := &j.Assessment
	si := state.StrikeInfo{Crawler: j.Client.Agent.Name, Token: as.TokenName(j.Who.Tokens), Scope: j.BlockDesc}
	if r := as.Decision.Rule; r != nil {
		si.Line = r.Line
	}
	if v := as.Version; v != nil {
		si.Version = v.ID
	}
	return si
}

// pace spends (or, in a dry run, reads) j's throttle budget. An unproven
// name of a rotating address keeps its own Crawl-delay and also spends its
// pool at the address (Who.Pool).
func (p *Pipeline) pace(ctx context.Context, j *Judgement, clk *clock) (state.ThrottleResult, error) {
	scope := p.PaceScope(j, clk.get())
	fetch := state.NewFetch(j.Target.Method, j.Host, j.Target.Raw)
	throttle := func(who *policy.Who) (state.ThrottleResult, error) {
		id := policy.ThrottleIdentity(scope, who, j.Addr())
		pace := policy.ThrottlePace(who, j.Assessment.Interval, p.cfg.Options.Burst, fetch)
		if j.DryRun {
			return peekPace(ctx, p.cfg.Store, id, pace, clk.get())
		}
		return p.cfg.Store.ThrottlePace(ctx, id, pace, clk.get())
	}
	if own, pooled := policy.OwnPace(&j.Who); pooled {
		res, err := throttle(&own)
		if err != nil || !res.Allowed {
			return res, err
		}
	}
	return throttle(&j.Who)
}

// PaceScope is the scope of j's Crawl-delay budget (the Site of its
// throttle identity). Per site block, the rules are the same whatever Host
// the client sends, and so is the budget: the site block's. With
// PacePerHost each host has its own robots.txt and its own budget, as RFC
// 9309 crawlers keep one per host; but a client chooses the Host header,
// and on a catch-all site a new made-up Host would be a new budget with
// every request. So a client (its name and address, as for a name
// rotation: state.Rotations) keeps a budget of its own on each of the
// first state.RotationResidents hosts it asks for within
// state.RotationWindow, and every further host shares one budget, the site
// block's, until an hour after its last new host. A verified crawler,
// whose name and address nobody can borrow, keeps one per host.
func (p *Pipeline) PaceScope(j *Judgement, now time.Time) string {
	block := p.banScope(j)
	if !p.cfg.PacePerHost {
		return block
	}
	host := j.Host
	if j.Mode == Log {
		host = "log|" + host
	}
	if j.Who.Verified || host == block || p.cfg.HostHops == nil {
		return host
	}
	who := block + "|" + j.Who.StateName()
	hops := p.cfg.HostHops
	if hops.Resident(who, j.Recorded, j.Host, now) || !hops.Note(who, j.Addr(), j.Recorded, j.Host, now, j.DryRun) {
		return host
	}
	return block
}

// peekPace asks the store what a request would get from its throttle
// budget now, spending nothing; a store that cannot tell answers allowed.
func peekPace(ctx context.Context, s state.Store, id state.Identity, p state.Pace, now time.Time) (state.ThrottleResult, error) {
	if pp, ok := s.(state.PacePeeker); ok {
		r, err := pp.PeekPace(ctx, id, p, now)
		if err != nil {
			return r, fmt.Errorf("robots: reading the throttle state: %w", err)
		}
		return r, nil
	}
	return state.ThrottleResult{Allowed: true}, nil
}

// clock reads the time once, on first use: an allowed request with no
// Crawl-delay, one robots.txt version and no strikes on record never
// reads it.
type clock struct {
	p  *Pipeline
	at time.Time
}

func (c *clock) get() time.Time {
	if c.at.IsZero() && c.p.cfg.Now != nil {
		c.at = c.p.cfg.Now()
	}
	return c.at
}

// rotation is the time for Rotations: At when given, else the coarser
// rotation clock.
func (c *clock) rotation() time.Time {
	if !c.at.IsZero() || c.p.cfg.RotationNow == nil {
		return c.get()
	}
	return c.p.cfg.RotationNow()
}
