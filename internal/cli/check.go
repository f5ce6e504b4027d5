package cli

// caddy robots check: what the robots handler would decide for URLs, from
// the same pipeline the server judges with, without live state.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/admin"
	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// defaultCheckDNSTimeout bounds a reverse-DNS verification in robots check.
const defaultCheckDNSTimeout = 2 * time.Second

// newCheckCommand is `caddy robots check`; h reads the robots handler's
// options.
func newCheckCommand(h Hooks, record func(int)) *cobra.Command {
	c := &cobra.Command{
		Use:   "check (--robots <file|url> | --config <Caddyfile> --site <host>) --agent <User-Agent> [--ip <addr>] <url>...",
		Short: "Tells whether a crawler may fetch URLs, and which rule decides",
		Long: `
Reads a robots.txt (a file, or an http(s) URL fetched once), identifies the
User-Agent as the robots handler does, and prints for each URL what the
handler would decide, from the same decision the server runs: the group
chosen, the rule and its line, the AI usage preference, and the crawler that
was judged. A browser's User-Agent is always allowed: robots.txt does not
apply to people.

The handler's options come from flags (--preferences, --crawl-delay,
--spoofed, --libraries, --unavailable, --mode) or from a config: with
--config <Caddyfile|caddy.json> --site <host[:port]>, the options of the
robots handler that serves that site are used, and its robots.txt too when
its source is a file or inline text (source site needs --robots).

With --ip, the claim is verified as the handler verifies it: the operator's
published IP ranges (embedded), then forward-confirmed reverse DNS, bounded by
--dns-timeout. A lookup that does not finish in time is "unverified", never
"spoofed".

The check has no live state: no throttle budget, strike or ban. It says
which Crawl-delay applies; the admin API's POST /robots/check reads the live
state.

--explain prints every form of each target that was judged (the server
judges "//private/x" as "/private/x" too). --requests <file> reads JSON
lines {"user_agent","ip","url","method","headers","tls_fingerprint"} and
prints one JSON decision per line, as POST /robots/check answers.

--tls-fingerprint <ja4> names the client's JA4 (the {http.robots.tls_fingerprint}
placeholder of an access log line). The tls signal judges the engine of a
live handshake from the whole ClientHello, which a JA4 hashes away, so the
check cannot tell a browser from a library by it: it prints what the
handshake would decide instead, and judges as without it.

Exit status: 0 if every URL is allowed, 3 if any is refused, 1 on a usage or
I/O error.`,
		Example: `  $ caddy robots check --robots https://example.com/robots.txt --agent 'GPTBot/1.2' https://example.com/private/
  $ caddy robots check --config Caddyfile --site example.com --agent 'GPTBot/1.2' --explain '/public/..%2fprivate/x'
  $ caddy robots check --robots robots.txt --agent 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' --ip 66.249.66.1 /search /`,
		RunE: RunE(func(env *Env) (int, error) { return runCheck(env, h) }, record),
	}
	f := c.Flags()
	f.String("robots", "", "robots.txt to read: a file path or an http(s) URL")
	f.String("config", "", "a Caddyfile or JSON config whose robots handler's options (and file or inline robots.txt) to judge with")
	f.String("adapter", "", "the config adapter for --config (default: caddyfile, or json for *.json)")
	f.String("site", "", "with --config: the site (host[:port]) whose robots handler judges")
	f.String("agent", "", "the User-Agent header to judge")
	f.String("ip", "", "the client address, to verify the crawler's claim")
	f.String("method", http.MethodGet, "the request method")
	f.StringArray("header", nil, "another request header, 'Name: value' (repeatable), e.g. X-Original-URL")
	f.Duration("dns-timeout", defaultCheckDNSTimeout, "how long reverse-DNS verification may take")
	f.String("resolver", "", "DNS server (host:port) for verification; default: the system's")
	f.Bool("explain", false, "print every form of each target that was judged")
	f.String("requests", "", "judge the requests of a JSON-lines file and print JSON decisions")
	f.String("tls-fingerprint", "", "the client's JA4 TLS fingerprint ({http.robots.tls_fingerprint}); a JA4 alone cannot tell a browser engine from a library, and the check says so")
	h.OptionFlags(f)
	return c
}

// Site is the robots handler a check or an audit judges with, as the root
// package reads it (Hooks.Site) from the option flags or from the handler
// that serves --site in the config given with --config.
type Site struct {
	// Mode and Libraries are the handler's options, as the config spells
	// them.
	Mode, Libraries string
	// Source, File and Inline say where the handler reads robots.txt
	// (site, file, inline), as the config does.
	Source, File, Inline string
	// Options are the decision's options.
	Options policy.Options
	// Trap is the trap path whose Disallow line the handler adds to every
	// group of a file or inline robots.txt; "" when it adds none.
	// WithTrapRules adds it to a robots.txt's text.
	Trap          string
	WithTrapRules func(text string) string
	// Parse parses a robots.txt body as the handler parses its rules.
	Parse func(body []byte) *enforce.Robots
	// Block is the site block whose handler judges, known with --config
	// only (nil without).
	Block *audit.SiteBlock
	// Audit is the audit's configuration as far as the handler alone sets
	// it (strikes, exempt networks, the state's bound, the undeclared
	// crawlers' modes and trap), after the audit's own option flags
	// (--crawl-burst, --undeclared, --trap, --trap-hold) are applied and
	// checked as the config would check them.
	Audit func(fl *pflag.FlagSet) (audit.Config, error)
}

// checkEnv is what judging a request needs in the CLI: the handler's
// options, the rules, and a verifier.
type checkEnv struct {
	site     *Site
	robots   *enforce.Robots
	src      *Source
	version  *policy.Version
	ident    *agents.Identifier
	timeout  time.Duration
	resolver string
	verdicts map[string]verdictWhy
	// trapRules is the trap path the handler adds to its file or inline
	// robots.txt in every group ("" when it adds none): the judged rules
	// carry it, as the handler's do.
	trapRules string
	// pipe judges as the handler does, without state.
	pipe *pipeline.Pipeline
	// fingerprint is --tls-fingerprint: the client's JA4, or "".
	fingerprint string
}

type verdictWhy struct {
	v   agents.Verdict
	why string
}

func runCheck(env *Env, h Hooks) (int, error) {
	fl := env.Flags
	ua, _ := fl.GetString("agent")
	batch, _ := fl.GetString("requests")
	if ua == "" && batch == "" {
		return ExitFailure, errors.New("robots check: --agent is required (or --requests)")
	}
	if batch == "" && len(env.Args) == 0 {
		return ExitFailure, errors.New("robots check: give at least one URL or path")
	}
	ce, err := newCheckEnv(env, h)
	if err != nil {
		return ExitFailure, fmt.Errorf("robots check: %w", err)
	}
	if batch != "" {
		return ce.runBatch(env, batch)
	}
	ipText, _ := fl.GetString("ip")
	var ip netip.Addr
	if ipText != "" {
		if ip, err = netip.ParseAddr(ipText); err != nil {
			return ExitFailure, fmt.Errorf("robots check: --ip: %w", err)
		}
	}
	method, _ := fl.GetString("method")
	headers, err := headerFlags(fl)
	if err != nil {
		return ExitFailure, fmt.Errorf("robots check: %w", err)
	}
	targets := make([]string, len(env.Args))
	for i, a := range env.Args {
		t, err := targetOf(a)
		if err != nil {
			return ExitFailure, fmt.Errorf("robots check: %w", err)
		}
		targets[i] = t
	}
	explain, _ := fl.GetBool("explain")
	fp, _ := fl.GetString("tls-fingerprint")
	if fp != "" && !ja4.IsFingerprint(fp) {
		return ExitFailure, fmt.Errorf("robots check: --tls-fingerprint %q is not a JA4 fingerprint (e.g. t13d1516h2_8daaf6152771_d8a2da3f94cd)", fp)
	}
	ce.fingerprint = fp
	return ce.printText(env, ua, ip, method, headers, targets, explain)
}

// newCheckEnv reads the options (Hooks.Site) and the robots.txt.
func newCheckEnv(env *Env, h Hooks) (*checkEnv, error) {
	fl := env.Flags
	ce := &checkEnv{ident: agents.NewIdentifier(4096), verdicts: map[string]verdictWhy{}}
	ce.timeout, _ = fl.GetDuration("dns-timeout")
	ce.resolver, _ = fl.GetString("resolver")
	cfgPath, _ := fl.GetString("config")
	robotsSrc, _ := fl.GetString("robots")
	site, err := h.Site(env)
	if err != nil {
		return nil, err
	}
	ce.site = site
	switch {
	case robotsSrc != "":
		ce.src, err = LoadRobots(env.Ctx, robotsSrc)
	case site.Source == "inline":
		ce.src = &Source{Name: "inline text of the config", Body: []byte(site.Inline)}
	case site.Source == "file":
		ce.src, err = LoadRobots(env.Ctx, site.File)
	case cfgPath != "":
		err = errors.New("the handler's source is the site itself: give its robots.txt with --robots (a file or the site's URL)")
	default:
		err = errors.New("--robots is required (or --config with a file or inline source)")
	}
	if err != nil {
		return nil, err
	}
	if !ce.src.Unavailable {
		body := ce.src.Body
		if robotsSrc == "" && site.Trap != "" {
			// The handler serves and enforces a file or inline source with
			// the trap's Disallow line in every group: the rules, their
			// line numbers and the version are those.
			body = []byte(site.WithTrapRules(string(body)))
			ce.trapRules = site.Trap
		}
		ce.robots = site.Parse(body)
		ce.version = &policy.Version{Robots: ce.robots, ID: sites.ContentID(body)}
	}
	ce.pipe = pipeline.New(pipeline.Config{Verifier: ce, Options: site.Options, Now: time.Now})
	return ce, nil
}

// headerFlags reads the --header flags.
func headerFlags(fl *pflag.FlagSet) (map[string]string, error) {
	hs, _ := fl.GetStringArray("header")
	out := map[string]string{}
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--header %q: want 'Name: value'", h)
		}
		out[http.CanonicalHeaderKey(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return out, nil
}

// judgement is one request judged by the CLI.
type judgement struct {
	agent    *agents.Shared // nil: a person (or a library under libraries ignore)
	why      string         // the verification's explanation
	robotsTx bool
	pipeline.Judgement
}

// judge judges one request as the handler would (the same pipeline),
// with no live state.
func (ce *checkEnv) judge(ctx context.Context, ua string, ip netip.Addr, method, target string, headers map[string]string) *judgement {
	j := &judgement{}
	var rewrites []string
	for _, k := range policy.RewriteHeaders {
		rewrites = append(rewrites, headers[k])
	}
	j.Target = policy.ParseTarget(method, target, rewrites...)
	sh := ce.ident.IdentifyShared(ua)
	if !sh.Bot && ce.version != nil {
		// A browser string with a word the site's groups name is that
		// group's bot, as the handler judges it.
		if tok := policy.NamedBySite(sh, []*policy.Version{ce.version}); tok != "" {
			sh = agents.NewShared(policy.NamedAgent(tok))
		}
	}
	if !sh.Bot || (ce.site.Libraries == "ignore" && sh.Category == agents.CategoryHTTPLibrary) {
		return j
	}
	j.agent = sh
	if j.Target.IsRobotsTxt() {
		j.robotsTx = true
		return j
	}
	j.Client = policy.Client{Agent: &sh.Agent, Addr: ip}
	if ce.version != nil {
		j.Site.Versions = []*policy.Version{ce.version}
	} else {
		j.Site.Unavailable = true
	}
	ce.pipe.Judge(ctx, &j.Judgement)
	if ip.IsValid() {
		j.why = ce.verify(ctx, sh.Agent, ip).why // the pipeline's verification, cached
	}
	return j
}

// Verify verifies a claim for the pipeline (verify, cached).
func (ce *checkEnv) Verify(ctx context.Context, a agents.Agent, ip netip.Addr) agents.Verdict {
	return ce.verify(ctx, a, ip).v
}

// verify verifies a claim once per (method, address).
func (ce *checkEnv) verify(ctx context.Context, a agents.Agent, ip netip.Addr) verdictWhy {
	if a.Profile.Verify == "" {
		return verdictWhy{agents.Unverified, "its operator publishes no way to verify it"}
	}
	key := a.Profile.Verify + "|" + ip.String()
	if vw, ok := ce.verdicts[key]; ok {
		return vw
	}
	v, why := verifyClaim(ctx, a, ip, ce.timeout, ce.resolver)
	vw := verdictWhy{v, why}
	ce.verdicts[key] = vw
	return vw
}

// printText judges each target for one client and prints the report.
func (ce *checkEnv) printText(env *Env, ua string, ip netip.Addr, method string, headers map[string]string, targets []string, explain bool) (int, error) {
	w := env.Stdout
	fmt.Fprintf(w, "robots.txt  %s (%s", ce.src.Name, Plural(len(ce.src.Body), "byte", "bytes"))
	if ce.src.Note != "" {
		fmt.Fprintf(w, "; %s", ce.src.Note)
	}
	fmt.Fprintf(w, ")\nagent       %s\n", ua)
	if ce.fingerprint != "" {
		fmt.Fprintf(w, "tls         %s\n", policy.TLSFingerprintNote(ua, ce.fingerprint))
	}
	first := ce.judge(env.Ctx, ua, ip, method, "/", headers)
	if first.agent == nil {
		fmt.Fprintf(w, "crawler     none: a browser's User-Agent\n\n")
		for i, t := range targets {
			fmt.Fprintf(w, "%s: allowed (not a crawler: robots.txt does not apply to people)\n", displayTarget(env.Args[i], t))
		}
		return ExitOK, nil
	}
	a := first.agent.Agent
	fmt.Fprintf(w, "crawler     %s\n", DescribeAgent(a))
	if len(a.Tokens) > 0 {
		fmt.Fprintf(w, "tokens      %s\n", strings.Join(a.Tokens, ", "))
	}
	if ip.IsValid() {
		fmt.Fprintf(w, "address     %s: %s: %s\n", ip, first.Client.Verdict, first.why)
	}
	if ce.robots != nil {
		ce.printGroup(w, first)
	}
	if a.Profile.UserTriggered {
		fmt.Fprintf(w, "note        a user-triggered fetcher: its operator says robots.txt may not apply to it\n")
	}
	fmt.Fprintln(w)

	refused := 0
	for i, t := range targets {
		j := ce.judge(env.Ctx, ua, ip, method, t, headers)
		name := displayTarget(env.Args[i], t)
		if ce.printJudgement(w, name, j, explain) {
			refused++
		}
	}
	fmt.Fprintf(w, "\n%d allowed, %d refused\n", len(targets)-refused, refused)
	if refused > 0 {
		return ExitRefused, nil
	}
	return ExitOK, nil
}

// printGroup prints the group the crawler is judged by, and its interval.
func (ce *checkEnv) printGroup(w io.Writer, j *judgement) {
	g, ti := ce.robots.SelectIndex(j.Who.Tokens, j.Who.Wildcard)
	switch {
	case j.Client.Verdict == agents.Spoofed:
		fmt.Fprintf(w, "group       %s, as a spoofed claim gets only \"*\"\n", g)
	case ti >= 0:
		fmt.Fprintf(w, "group       %s, chosen by token %s\n", g, j.Who.Tokens[ti])
	case g != nil:
		fmt.Fprintf(w, "group       %s: no group names its tokens\n", g)
	case !j.Who.Wildcard:
		fmt.Fprintf(w, "group       none: no group names its tokens, and it ignores the \"*\" group by design\n")
	default:
		fmt.Fprintf(w, "group       none: no group names its tokens and there is no \"*\" group\n")
	}
	if iv := g.Interval(); iv > 0 {
		fmt.Fprintf(w, "interval    %s between requests (%s)\n", iv, policy.RateSource(g))
	}
}

// printJudgement prints one target's decision and reports whether it is
// refused.
func (ce *checkEnv) printJudgement(w io.Writer, name string, j *judgement, explain bool) bool {
	as := &j.Assessment
	if j.robotsTx {
		fmt.Fprintf(w, "%s: allowed\n  rule     none: /robots.txt is always allowed\n", name)
		return false
	}
	refused := as.Refused()
	switch as.Reason {
	case policy.None:
		fmt.Fprintf(w, "%s: allowed\n", name)
	case policy.Rule:
		fmt.Fprintf(w, "%s: disallowed\n", name)
	case policy.Spoofed:
		fmt.Fprintf(w, "%s: refused (spoofed claim: the robots handler refuses it with \"spoofed block\", the default)\n", name)
		g := ce.robots.Select(nil, true)
		d, _ := policy.DecideForms(g, j.Target.Forms())
		fmt.Fprintf(w, "  with \"spoofed wildcard\": %s\n", d)
		return true
	default:
		facts := j.Facts()
		fmt.Fprintf(w, "%s: refused (%s)\n", name, refusalSummary(policy.Explain(as, &facts, "")))
	}
	d := as.Decision
	switch {
	case as.Reason == policy.Preference:
		fmt.Fprintf(w, "  preference %s\n", as.Preference)
	case d.Rule != nil:
		fmt.Fprintf(w, "  rule     %s\n", d.Rule)
	case d.Group == nil && as.Version != nil:
		fmt.Fprintf(w, "  rule     none: no group applies\n")
	case as.Version != nil:
		fmt.Fprintf(w, "  rule     none of the group matches\n")
	}
	if d.Group != nil {
		fmt.Fprintf(w, "  group    %s\n", d.Group)
	}
	if form := as.RefusedFormText(&j.Target); form != "" {
		fmt.Fprintf(w, "  judged   as %s (%s)\n", form, j.Target.Source(as.RefusedForm))
	}
	fmt.Fprintf(w, "  crawler  %s\n", crawlerLine(j.agent.Agent, j.Who.Tokens, j.Client.Verdict, j.Client.Addr.IsValid()))
	if explain {
		for i, f := range j.Target.Forms() {
			fmt.Fprintf(w, "  form     %s (%s)\n", f, j.Target.Source(i))
		}
		if as.Reason == policy.Rule {
			switch {
			case as.Strike:
				fmt.Fprintf(w, "  strike   yes: every reading of robots.txt disallows it\n")
			case as.NoStrike != "":
				fmt.Fprintf(w, "  strike   no: %s\n", as.NoStrike)
			default:
				fmt.Fprintf(w, "  strike   no: strikes are off\n")
			}
		}
		if as.Interval > 0 {
			fmt.Fprintf(w, "  pace     %s between requests (%s)\n", as.Interval, policy.RateSource(as.RateGroup))
		}
	}
	return refused
}

// refusalSummary is the first line of a refusal's explanation, without
// its "Refused:" lead.
func refusalSummary(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	for _, lead := range []string{"Refused for now: ", "Refused: ", "Slow down: "} {
		line = strings.TrimPrefix(line, lead)
	}
	return strings.TrimSpace(line)
}

// batchRequest is one line of --requests.
type batchRequest struct {
	UserAgent string            `json:"user_agent"`
	IP        string            `json:"ip"`
	URL       string            `json:"url"`
	Method    string            `json:"method,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// TLSFingerprint is the client's JA4 (see --tls-fingerprint).
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
}

// runBatch judges every request of a JSON-lines file and prints one JSON
// decision per line, in the shape of POST /robots/check's answer.
func (ce *checkEnv) runBatch(env *Env, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return ExitFailure, fmt.Errorf("robots check: --requests: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(env.Stdout)
	code, line := ExitOK, 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var br batchRequest
		if err := json.Unmarshal(sc.Bytes(), &br); err != nil {
			return ExitFailure, fmt.Errorf("robots check: %s:%d: %w", path, line, err)
		}
		res, err := ce.judgeBatch(env.Ctx, br)
		if err != nil {
			return ExitFailure, fmt.Errorf("robots check: %s:%d: %w", path, line, err)
		}
		if res.Decision != policy.Allow.String() {
			code = ExitRefused
		}
		if err := enc.Encode(res); err != nil {
			return ExitFailure, fmt.Errorf("robots check: writing: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return ExitFailure, fmt.Errorf("robots check: reading %s: %w", path, err)
	}
	return code, nil
}

// judgeBatch judges one batch request.
func (ce *checkEnv) judgeBatch(ctx context.Context, br batchRequest) (admin.CheckResponse, error) {
	var ip netip.Addr
	if br.IP != "" {
		var err error
		if ip, err = netip.ParseAddr(br.IP); err != nil {
			return admin.CheckResponse{}, fmt.Errorf("ip %q: %w", br.IP, err)
		}
		ip = ip.Unmap()
	}
	target, err := targetOf(br.URL)
	if err != nil {
		return admin.CheckResponse{}, err
	}
	method := br.Method
	if method == "" {
		method = http.MethodGet
	}
	hs := map[string]string{}
	for k, v := range br.Headers {
		hs[http.CanonicalHeaderKey(k)] = v
	}
	if br.TLSFingerprint != "" && !ja4.IsFingerprint(br.TLSFingerprint) {
		return admin.CheckResponse{}, fmt.Errorf("tls_fingerprint %q is not a JA4 fingerprint", br.TLSFingerprint)
	}
	j := ce.judge(ctx, br.UserAgent, ip, method, target, hs)
	res := admin.CheckResponse{Mode: ce.site.Mode}
	if br.TLSFingerprint != "" {
		res.TLS = policy.TLSFingerprintNote(br.UserAgent, br.TLSFingerprint)
	}
	switch {
	case j.agent == nil:
		res.Decision, res.Reason = policy.Allow.String(), "not a crawler"
		return res, nil
	case j.robotsTx:
		res.Decision, res.Reason, res.Crawler = policy.Allow.String(), "/robots.txt is always served", j.agent.Name
		return res, nil
	}
	res.Crawler = j.agent.Name
	res.Fill(&j.Judgement)
	return res, nil
}

// crawlerLine names the crawler that decided, its tokens and its verdict.
func crawlerLine(a agents.Agent, tokens []string, v agents.Verdict, verified bool) string {
	s := a.Name
	if s == "" {
		s = "(unnamed client)"
	}
	if len(tokens) > 0 {
		s += " [" + strings.Join(tokens, " ") + "]"
	} else {
		s += " [*]"
	}
	if verified {
		s += ", " + v.String()
	}
	return s
}

// targetOf turns a URL or a path into the request target a client sends
// for it: everything after the authority, exactly as written
// ("https://h//private/x" sends "//private/x"), without a fragment.
func targetOf(arg string) (string, error) {
	if strings.HasPrefix(arg, "/") {
		t, _, _ := strings.Cut(arg, "#")
		return t, nil
	}
	u, err := url.Parse(arg)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is neither an http(s) URL with a host nor a path starting with \"/\"", arg)
	}
	rest := strings.TrimPrefix(arg, u.Scheme+"://")
	t := "/"
	if i := strings.IndexAny(rest, "/?#"); i >= 0 && rest[i] != '#' {
		t = rest[i:]
		if t[0] == '?' {
			t = "/" + t
		}
	}
	t, _, _ = strings.Cut(t, "#")
	return t, nil
}

// displayTarget prints a URL argument as given, and a path as its target.
func displayTarget(arg, target string) string {
	if strings.HasPrefix(arg, "/") {
		return target
	}
	return arg
}

// verifyClaim verifies a's claim for ip and says why in a few words.
func verifyClaim(ctx context.Context, a agents.Agent, ip netip.Addr, timeout time.Duration, resolver string) (agents.Verdict, string) {
	key := a.Profile.Verify
	if key == "" {
		return agents.Unverified, "its operator publishes no way to verify it"
	}
	var m agents.VerificationMethod
	for _, vm := range agents.VerificationMethods() {
		if vm.Key == key {
			m = vm
		}
	}
	u := ip.Unmap()
	if !u.IsGlobalUnicast() || u.IsPrivate() {
		return agents.Unverified, "not a public address: most likely a proxy's"
	}
	cfg := agents.VerifierConfig{Timeout: timeout}
	if resolver != "" {
		cfg.Resolver = agents.ResolverAt(resolver)
	}
	v, err := agents.NewVerifier(cfg)
	if err != nil {
		return agents.Unverified, "verification data unavailable: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+250*time.Millisecond)
	defer cancel()
	start := time.Now()
	verdict := v.Verify(ctx, a, ip)
	took := time.Since(start)
	who := m.Name
	if who == "" {
		who = a.Operator
	}
	switch verdict {
	case agents.Verified:
		return verdict, "an address of " + who
	case agents.Spoofed:
		if len(m.RDNSSuffixes) == 0 {
			return verdict, "not in the published IP list of " + who
		}
		return verdict, "reverse DNS does not confirm a name under " + strings.Join(m.RDNSSuffixes, ", ")
	}
	if len(m.RDNSSuffixes) == 0 {
		return verdict, fmt.Sprintf("not in the IP list of %s dated %s, too old to prove a spoof", who, m.ListDate.Format("2006-01-02"))
	}
	if took >= timeout {
		return verdict, fmt.Sprintf("reverse DNS did not answer within %s", timeout)
	}
	return verdict, "not in the published ranges, and reverse DNS failed"
}
