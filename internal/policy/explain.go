package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
)

// Explain renders the plain-text explanation a refused crawler receives:
// the group, the rule, its line and the robots.txt version for a refusal by
// rule; the ban and its end; the Crawl-delay and when to come back. host is
// the site's host name, for throttle texts. It returns "" for an allowed
// request.
func Explain(a *Assessment, f *Facts, host string) string {
	ag, who := f.Client.Agent, f.Who
	switch a.Reason {
	case None:
		return ""
	case BadTarget:
		if f.Target.overflow {
			return fmt.Sprintf("Refused: the request target and its rewrite headers (X-Original-URL, X-Rewrite-URL, X-Forwarded-Prefix) have more than %d readings, so it cannot be judged whole.\n", MaxForms)
		}
		return "Refused: the request target is neither a path (/...) nor an absolute URL with a host (http://host/...).\n"
	case TooLong:
		return fmt.Sprintf("Refused: request targets longer than %d bytes are not served to crawlers.\n", MaxTargetLength)
	case Spoofed:
		return fmt.Sprintf("Refused: this request claims to be %s, but %s is not one of %s's addresses.\n",
			ag.Name, f.Client.Addr, OperatorOf(ag))
	case Banned:
		return banText(a, f)
	case Unavailable:
		return "Refused: this site's /robots.txt cannot be read right now, and RFC 9309 §2.3.1.4 tells crawlers to assume a complete disallow. Please retry later.\n"
	case Unverified:
		return fmt.Sprintf("Refused for now: this request claims to be %s, which could not be verified from %s yet, and the \"*\" group of /robots.txt disallows this path. Please retry later.\n",
			ag.Name, f.Client.Addr)
	case Rate:
		return fmt.Sprintf("Slow down: /robots.txt of %s asks %s to wait %s between requests (%s).\nCome back in %s s (Retry-After).\n",
			hostLabel(host), who.Name, a.Interval, RateSource(a.RateGroup), RetryAfterSeconds(a.RetryAfter))
	case Preference:
		return preferenceText(a, who.Name, string(ag.Purpose))
	}
	return ruleText(a, f, who.Name)
}

// banText explains a ban: whose it is, in which site block, by which
// rules and when. A ban is always the requester's own (StrikeIdentity
// never pools), and the text names only the requester, the site and the
// rules: never the name or address of another client, not even that of the
// client whose requests earned a ban under the same identity.
func banText(a *Assessment, f *Facts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Refused: %s is banned until %s after repeatedly requesting paths that /robots.txt disallows.\n",
		f.Who.Name, a.BanUntil.UTC().Format(time.RFC3339))
	if f.Ban != nil {
		info := f.Ban.Info
		if info.Scope != "" {
			fmt.Fprintf(&b, "Site: %s\n", info.Scope)
		}
		if info.Token != "" {
			fmt.Fprintf(&b, "Judged by User-agent: %s\n", info.Token)
		}
		for _, s := range info.Strikes {
			fmt.Fprintf(&b, "Strike: line %d of robots.txt version %s, at %s\n", s.Line, s.Version, s.At.UTC().Format(time.RFC3339))
		}
	}
	return b.String()
}

// RefusedFormText is the form a rule or preference refused when it differs
// from the target as sent, with the reading it comes from; "" otherwise.
func (a *Assessment) RefusedFormText(t *Target) string {
	if a.RefusedForm <= 0 || a.RefusedForm >= t.n {
		return ""
	}
	return t.forms[a.RefusedForm]
}

// ruleText explains a refusal by rule: the group, the rule, its line and
// the robots.txt version.
func ruleText(a *Assessment, f *Facts, name string) string {
	var b strings.Builder
	b.WriteString("Refused: /robots.txt disallows this path for ")
	b.WriteString(name)
	b.WriteString(".\n")
	if g := a.Decision.Group; g != nil {
		b.WriteString("Group: ")
		b.WriteString(g.String())
		b.WriteString("\n")
	}
	if rule := a.Decision.Rule; rule != nil {
		b.WriteString("Rule: ")
		b.WriteString(rule.String())
		b.WriteString("\n")
	}
	if form := a.RefusedFormText(f.Target); form != "" {
		b.WriteString("Judged as: ")
		b.WriteString(form)
		b.WriteString(" (")
		b.WriteString(judgedAs(f.Target.Source(a.RefusedForm)))
		b.WriteString(")\n")
	}
	if a.NoStrike != "" {
		b.WriteString("No strike: ")
		b.WriteString(a.NoStrike)
		b.WriteString(".\n")
	}
	if a.Version != nil {
		b.WriteString("Version: ")
		b.WriteString(a.Version.ID)
		b.WriteString("\n")
	}
	b.WriteString("See /robots.txt for the rules of this site.\n")
	return b.String()
}

// judgedAs says, for a refused form, why the server may act on it.
func judgedAs(s FormSource) string {
	switch s {
	case FromHeader:
		return "a rewrite header some backends serve instead of the path"
	case FromAuthority:
		return "the path a backend reading the target as a URL reference acts on"
	}
	return "the path the server acts on"
}

// preferenceText explains a refusal by preference.
func preferenceText(a *Assessment, name, purpose string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Refused: /robots.txt states an AI usage preference for this path that excludes %s (%s).\n", name, purpose)
	fmt.Fprintf(&b, "Preference: %s\n", a.Preference)
	if g := a.Decision.Group; g != nil {
		fmt.Fprintf(&b, "Group: %s\n", g)
	}
	if a.Version != nil {
		fmt.Fprintf(&b, "Version: %s\n", a.Version.ID)
	}
	b.WriteString("This is not a strike: no Allow or Disallow rule was broken.\n")
	return b.String()
}

// RateSource names the records a throttle comes from: "Crawl-delay: 2 in
// User-agent: * (line 1)".
func RateSource(g *enforce.Group) string {
	if g == nil {
		return "robots.txt"
	}
	var parts []string
	if g.CrawlDelay > 0 {
		parts = append(parts, "Crawl-delay: "+strconv.FormatFloat(g.CrawlDelay.Seconds(), 'f', -1, 64))
	}
	if r := g.RequestRate; r.Requests > 0 {
		parts = append(parts, fmt.Sprintf("Request-rate: %d/%s", r.Requests, r.Per))
	}
	return strings.Join(parts, ", ") + " in " + g.String()
}

// OperatorOf names who runs a crawler: its operator, else its name.
func OperatorOf(a *agents.Agent) string {
	if a.Operator != "" {
		return a.Operator
	}
	return a.Name
}

// RetryAfterSeconds formats a wait as whole seconds, rounded up, at least 1,
// as a Retry-After header carries it.
func RetryAfterSeconds(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

func hostLabel(host string) string {
	if host == "" {
		return "this site"
	}
	return host
}
