package caddyrobots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
)

// defaultCheckDNSTimeout bounds a reverse-DNS verification in robots check.
const defaultCheckDNSTimeout = 2 * time.Second

func newCheckCommand(record func(int)) *cobra.Command {
	c := &cobra.Command{
		Use:   "check --robots <file|url> --agent <User-Agent> [--ip <addr>] <url>...",
		Short: "Tells whether a crawler may fetch URLs, and which rule decides",
		Long: `
Reads a robots.txt (a file, or an http(s) URL fetched once), identifies the
User-Agent as the robots handler does, and prints for each URL whether that
client may fetch it: the group chosen, the rule and its line, and the crawler
that was judged. A browser's User-Agent is always allowed: robots.txt does not
apply to people.

With --ip, the claim is verified as the handler verifies it: the operator's
published IP ranges (embedded), then forward-confirmed reverse DNS, bounded by
--dns-timeout. A lookup that does not finish in time is "unverified", never
"spoofed". A spoofed claim is refused, as the handler does by default.

Exit status: 0 if every URL is allowed, 3 if any is refused, 1 on a usage or
I/O error.`,
		Example: `  $ caddy robots check --robots https://example.com/robots.txt --agent 'GPTBot/1.2' https://example.com/private/
  $ caddy robots check --robots robots.txt --agent 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' --ip 66.249.66.1 /search /`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(runCheck, record),
	}
	f := c.Flags()
	f.String("robots", "", "robots.txt to read: a file path or an http(s) URL (required)")
	f.String("agent", "", "the User-Agent header to judge (required)")
	f.String("ip", "", "the client address, to verify the crawler's claim")
	f.Duration("dns-timeout", defaultCheckDNSTimeout, "how long reverse-DNS verification may take")
	f.String("resolver", "", "DNS server (host:port) for verification; default: the system's")
	return c
}

func runCheck(env *cliEnv) (int, error) {
	fl := env.flags
	robotsSrc, _ := fl.GetString("robots")
	ua, _ := fl.GetString("agent")
	ipText, _ := fl.GetString("ip")
	dnsTimeout, _ := fl.GetDuration("dns-timeout")
	resolver, _ := fl.GetString("resolver")
	if robotsSrc == "" || ua == "" {
		return exitFailure, errors.New("robots check: --robots and --agent are required")
	}
	var ip netip.Addr
	if ipText != "" {
		var err error
		if ip, err = netip.ParseAddr(ipText); err != nil {
			return exitFailure, fmt.Errorf("robots check: --ip: %w", err)
		}
	}
	targets := make([]string, len(env.args))
	for i, a := range env.args {
		t, err := targetOf(a)
		if err != nil {
			return exitFailure, fmt.Errorf("robots check: %w", err)
		}
		targets[i] = t
	}
	src, err := loadRobots(env.ctx, robotsSrc)
	if err != nil {
		return exitFailure, fmt.Errorf("robots check: %w", err)
	}
	robots := enforce.Parse(src.body)

	w := env.stdout
	fmt.Fprintf(w, "robots.txt  %s (%s", src.name, plural(len(src.body), "byte", "bytes"))
	if src.note != "" {
		fmt.Fprintf(w, "; %s", src.note)
	}
	fmt.Fprintf(w, ")\nagent       %s\n", ua)

	a := agents.Identify(ua)
	if !a.Bot {
		fmt.Fprintf(w, "crawler     none: a browser's User-Agent\n\n")
		for i, t := range targets {
			fmt.Fprintf(w, "%s: allowed (not a crawler: robots.txt does not apply to people)\n", displayTarget(env.args[i], t))
		}
		return exitOK, nil
	}

	verdict, why := agents.Unverified, ""
	if ip.IsValid() {
		verdict, why = verifyClaim(env.ctx, a, ip, dnsTimeout, resolver)
	}
	tokens, wildcard := judgeTokens(a, verdict)
	g, ti := robots.SelectIndex(tokens, wildcard)

	fmt.Fprintf(w, "crawler     %s\n", describeAgent(a))
	if len(a.Tokens) > 0 {
		fmt.Fprintf(w, "tokens      %s\n", strings.Join(a.Tokens, ", "))
	}
	if ip.IsValid() {
		fmt.Fprintf(w, "address     %s: %s: %s\n", ip, verdict, why)
	}
	switch {
	case verdict == agents.Spoofed:
		fmt.Fprintf(w, "group       %s, as a spoofed claim gets only \"*\"\n", g)
	case ti >= 0:
		fmt.Fprintf(w, "group       %s, chosen by token %s\n", g, tokens[ti])
	case g != nil:
		fmt.Fprintf(w, "group       %s: no group names its tokens\n", g)
	case !wildcard:
		fmt.Fprintf(w, "group       none: no group names its tokens, and it ignores the \"*\" group by design\n")
	default:
		fmt.Fprintf(w, "group       none: no group names its tokens and there is no \"*\" group\n")
	}
	if iv := g.Interval(); iv > 0 {
		fmt.Fprintf(w, "interval    %s between requests (%s)\n", iv, rateSource(g))
	}
	if a.Profile.UserTriggered {
		fmt.Fprintf(w, "note        a user-triggered fetcher: its operator says robots.txt may not apply to it\n")
	}
	fmt.Fprintln(w)

	refused := 0
	for i, t := range targets {
		// Every form of the target the server may act on, as the handler
		// judges it: "//private/x" is judged as "/private/x" too.
		req := &http.Request{Method: http.MethodGet, RequestURI: t}
		if u, err := url.ParseRequestURI(t); err == nil {
			req.URL = u
		}
		forms := formsOf(req)
		d, _ := decideAll(g, forms.all())
		name := displayTarget(env.args[i], t)
		if verdict == agents.Spoofed {
			refused++
			fmt.Fprintf(w, "%s: refused (spoofed claim: the robots handler refuses it with \"spoofed block\", the default)\n", name)
			fmt.Fprintf(w, "  with \"spoofed wildcard\": %s\n", d)
			continue
		}
		verb := "allowed"
		if !d.Allowed {
			verb = "disallowed"
			refused++
		}
		fmt.Fprintf(w, "%s: %s\n", name, verb)
		switch {
		case d.Rule != nil:
			fmt.Fprintf(w, "  rule     %s\n", d.Rule)
		case d.Group == nil:
			fmt.Fprintf(w, "  rule     none: no group applies\n")
		case strings.SplitN(t, "?", 2)[0] == "/robots.txt":
			fmt.Fprintf(w, "  rule     none: /robots.txt is always allowed\n")
		default:
			fmt.Fprintf(w, "  rule     none of the group matches\n")
		}
		if d.Group != nil {
			fmt.Fprintf(w, "  group    %s\n", d.Group)
		}
		fmt.Fprintf(w, "  crawler  %s\n", crawlerLine(a, tokens, verdict, ip.IsValid()))
	}
	fmt.Fprintf(w, "\n%d allowed, %d refused\n", len(targets)-refused, refused)
	if refused > 0 {
		return exitRefused, nil
	}
	return exitOK, nil
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

// targetOf turns a URL or a path into the request target robots.txt
// rules are matched against: path and query, as sent on the wire.
func targetOf(arg string) (string, error) {
	if strings.HasPrefix(arg, "/") {
		t, _, _ := strings.Cut(arg, "#")
		return t, nil
	}
	u, err := url.Parse(arg)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is neither a URL with a host nor a path starting with \"/\"", arg)
	}
	return u.RequestURI(), nil
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
		cfg.Resolver = resolverFor(resolver)
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
