package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// auditFormats are the values of caddy robots audit --format.
var auditFormats = []string{"table", "json", "html", "decisions"}

// auditLong is caddy robots audit --help.
const auditLong = `
Streams access logs (plain or gzip-compressed, of any size; "-" is the
standard input) and judges every crawler's request with the decision the
robots handler runs, replaying its throttle, strike and ban state in log
order: replaying a server's own access log with its options gives the
server's decisions. It reads Caddy's JSON access log, and the Combined and
Common Log Formats of nginx and Apache, line by line (a file may mix them).
The Common Log Format records no User-Agent: its lines cannot be told to
be a person's or a crawler's, and are counted apart, not judged. A
Combined or Common line whose first field is not the client's address is
an error that names the line: give --log-format vhost_combined for
Apache's vhost_combined ("%v:%p %h %l %u %t \"%r\" %>s %O ...", Debian's
other_vhosts_access.log), or --log-format with the nginx log_format string
the server uses (e.g. '$remote_addr - $remote_user [$time_local]
"$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"').
Of an nginx format the audit reads $remote_addr, $time_local,
$time_iso8601, $msec, $request, $request_method, $request_uri, $status,
$http_user_agent, and $host, $http_host or $server_name; any other
variable is a field it skips.

Per site and crawler it reports: requests; refused by a rule (and which
rules); refused by an AI usage preference (with --preferences enforce; else
the conflicts that enforce would refuse); throttled for coming faster than
the Crawl-delay; refused while banned; spoofed claims (an address outside
the operator's published IP ranges; embedded lists only, no DNS); strikes;
fetches of /robots.txt; first and last seen. This plugin's own requests
(its robots.txt loader, this command line) are counted apart, never as
crawlers. Each crawler's judged requests are split by what verifying its
claim found: verified, unverified, spoofed, each with its refusals, its
bans and the addresses behind them (at most five, from bounded tables), so
that one fake Googlebot's ban is not blamed on the real one. The report
splits by site when the log holds several; --host keeps the lines of the
sites named (Caddy's JSON, vhost_combined and an nginx format with $host
record the Host; the Common and Combined Log Formats do not).

The handler's options come from the same flags as caddy robots check
(--mode, --preferences, --crawl-delay, --spoofed, --libraries,
--unavailable, --strikes), --crawl-burst, --undeclared, --trap and
--trap-hold, or from a config: with
--config <Caddyfile|caddy.json> --site <host[:port]>, the options of the
robots handler that serves that site (and its robots.txt when its source is
a file or inline text).

Undeclared crawlers (browser User-Agents that the handler's signals show
to be programs) are judged as the handler judges them, by the "*" group
with their own state, and reported apart from the crawlers that name
themselves, per signal: the header rule (a browser's claim over HTTPS or to
a loopback host without the headers that browser always sends) needs the
request headers that only Caddy's JSON log records; the trap (--trap, or
the config's trap) applies to every format with a User-Agent; the tls
signal (a browser claim over an HTTP library's TLS handshake) needs the
fields a Caddy site adds to its JSON access log with

    log_append tls_fingerprint {http.robots.tls_fingerprint}
    log_append tls_engine {http.robots.tls_engine}
    log_append tls_versions {http.robots.tls_versions}

and the report then lists who it judged by handshake (fingerprint, engine,
claimed browser, requests, refused, what enforce would refuse, addresses).
The signals' modes are the config's, or --undeclared off|log|enforce
(default: each signal's own).

With --robots-new, it also previews what a changed robots.txt would newly
refuse, and which allowed requests would newly conflict with its
preferences, judged on that real traffic.

--format decisions prints one JSON line per request judged, in log order,
with the fields of the admin API's POST /robots/check ("decision": allow,
block, throttle or ban; "reason": rule, spoofed, unavailable, ban, rate,
target, length, unverified or preference; "rule", "line", "preference",
"judged_as", "strike", ...) and the line's "ts", "host", "method", "uri",
"client_ip" and "user_agent"; for an undeclared crawler, "undeclared" names
the signal that caught it (fetch_metadata, fetch_metadata_safari,
client_hints, trap, tls), "trap" what a trap request did ("marked",
"probation") and "why" what the tls signal found; "tls_fingerprint" and
"tls_engine" are the line's, as logged.

Memory stays bounded: per-crawler aggregates for at most --max-crawlers
crawlers (the rest are counted together), and the handler's bounded state
store. Give the logs oldest first: the state is replayed in the order the
lines are read. A progress bar is drawn on stderr when it is a terminal.

Exit status: 0 with a report, 1 on a usage or I/O error or when nothing in
the logs could be read (the message says which formats were expected and
shows the first unreadable line).`

// auditExample is caddy robots audit's examples.
const auditExample = `  $ caddy robots audit --robots /srv/www/robots.txt /var/log/caddy/access.log.1 /var/log/caddy/access.log
  $ caddy robots audit --config /etc/caddy/Caddyfile --site example.com --host example.com access.log.gz
  $ caddy robots audit --robots https://example.com/robots.txt --robots-new robots.new.txt --format html --out report.html access.log.gz
  $ caddy robots audit --robots robots.txt --format decisions /var/log/nginx/access.log | jq 'select(.decision != "allow")'`

func newAuditCommand(h Hooks, record func(int)) *cobra.Command {
	c := &cobra.Command{
		Use:     "audit (--robots <file|url> | --config <Caddyfile> --site <host>) [--robots-new <file>] [--host <name>]... [--format table|json|html|decisions] [--out <file>] <access-log>...",
		Short:   "Replays access logs through the robots handler's decision and reports how crawlers behaved",
		Long:    auditLong,
		Example: auditExample,
		Args:    cobra.MinimumNArgs(1),
		RunE:    RunE(func(env *Env) (int, error) { return runAudit(env, h) }, record),
	}
	f := c.Flags()
	f.String("robots", "", "robots.txt the traffic is judged against: a file or an http(s) URL")
	f.String("config", "", "a Caddyfile or JSON config whose robots handler's options (and file or inline robots.txt) to judge with")
	f.String("adapter", "", "the config adapter for --config (default: caddyfile, or json for *.json)")
	f.String("site", "", "with --config: the site (host[:port]) whose robots handler judges; also the host of Common and Combined Log Format lines")
	f.String("robots-new", "", "a changed robots.txt to preview: what would it newly refuse?")
	f.StringArray("host", nil, "keep only the requests for this host (repeatable); logs that record the Host only (Caddy JSON, vhost_combined, an nginx format with $host)")
	f.String("log-format", "combined", "how lines that are not Caddy's JSON are written: combined (Combined or Common, nginx and Apache), vhost_combined (Apache's other_vhosts_access.log), or an nginx log_format string ('$remote_addr - $remote_user [$time_local] \"$request\" ...')")
	f.String("format", "table", "report format: "+strings.Join(auditFormats, ", "))
	f.String("out", "", "write the report to this file instead of stdout")
	f.Int("max-crawlers", audit.DefaultMaxCrawlers, "crawlers reported by name; the others are counted together")
	h.OptionFlags(f)
	f.Int("crawl-burst", 0, "how many requests may come back to back before Crawl-delay throttles (default 4)")
	f.String("undeclared", "", "off | log | enforce: every signal for undeclared crawlers at once (default: fetch_metadata and trap enforce, the others log)")
	f.String("disguised", "", "the old name of --undeclared")
	_ = f.MarkHidden("disguised") // still read, with a notice on stderr (runAudit)
	f.String("trap", "", "the handler's trap path (e.g. /no-robots/): whoever asks for it is an undeclared crawler for --trap-hold")
	f.Duration("trap-hold", policy.DefaultTrapHold, "with --trap: how long a client that took the trap is judged as a crawler")
	return c
}

// auditOptionFlags are the flags of the handler's options, which --config
// replaces.
var auditOptionFlags = []string{"mode", "preferences", "crawl-delay", "spoofed", "libraries", "unavailable", "grace", "strikes", "crawl-burst",
	"undeclared", "disguised", "trap", "trap-hold"}

func runAudit(env *Env, h Hooks) (int, error) {
	fl := env.Flags
	if fl.Changed("disguised") {
		fmt.Fprintln(env.Stderr, "robots audit: --disguised is now --undeclared; the old name will be removed")
	}
	format, _ := fl.GetString("format")
	out, _ := fl.GetString("out")
	newSrc, _ := fl.GetString("robots-new")
	if !slices.Contains(auditFormats, format) {
		return ExitFailure, fmt.Errorf("robots audit: --format %q: want %s", format, strings.Join(auditFormats, ", "))
	}
	site, err := auditConfig(env, h)
	if err != nil {
		return ExitFailure, fmt.Errorf("robots audit: %w", err)
	}
	cfg := &site.Config
	if newSrc != "" {
		ns, err := LoadRobots(env.Ctx, newSrc)
		if err != nil {
			return ExitFailure, fmt.Errorf("robots audit: --robots-new: %w", err)
		}
		cfg.RobotsNew = site.Parse(ns.Body)
	}

	w := env.Stdout
	var file *os.File
	if out != "" {
		if file, err = os.Create(out); err != nil {
			return ExitFailure, fmt.Errorf("robots audit: %w", err)
		}
		defer file.Close()
		w = file
	}
	var decisions *bufio.Writer
	if format == "decisions" {
		decisions = bufio.NewWriterSize(w, 64<<10)
		cfg.Decisions = decisions
	}
	a, err := audit.New(*cfg)
	if err != nil {
		return ExitFailure, fmt.Errorf("robots audit: %w", err)
	}
	if err := feedLogs(env, a); err != nil {
		return ExitFailure, fmt.Errorf("robots audit: %w", err)
	}

	r := a.Report()
	if err := site.describe(r, env.Args, newSrc); err != nil {
		return ExitFailure, fmt.Errorf("robots audit: %w", err)
	}
	switch format {
	case "decisions":
		err = decisions.Flush()
	case "json":
		err = r.WriteJSON(w)
	case "html":
		err = r.WriteHTML(w)
	default:
		err = r.WriteTable(w)
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return ExitFailure, fmt.Errorf("robots audit: writing the report: %w", err)
	}
	if out != "" {
		fmt.Fprintf(env.Stderr, "report written to %s\n", out)
	}
	return ExitOK, nil
}

// describe names in r what was judged (the robots.txt, the logs, the
// preview) and adds the notes a reader needs; it fails when nothing in the
// logs could be read.
func (s *AuditSite) describe(r *audit.Report, logs []string, newSrc string) error {
	src, cfg := s.Source, &s.Config
	r.Robots, r.Logs = src.Name, logs
	if s.TrapRules != "" {
		r.Robots += " (with Disallow: " + s.TrapRules + " in every group, as the handler serves it)"
	}
	if newSrc != "" {
		r.RobotsNew = newSrc
	}
	if err := r.Readable(); err != nil {
		return err
	}
	r.Notes = append(r.Notes,
		"spoofed claims are judged with the embedded IP lists only (no DNS): a list proves a spoof only if it was at most 30 days old at the time of the request, and crawlers verified by reverse DNS alone are never counted as spoofed here; their claims from addresses outside the lists are judged as unverified claims (their own group and \"*\"), where the server may verify them by DNS")
	if src.Note != "" {
		r.Notes = append(r.Notes, src.Name+": "+src.Note)
	}
	if cfg.Trap != "" && s.TrapRules == "" && !cfg.Unavailable {
		if _, ok := policy.TrapRule(cfg.Robots, cfg.Trap); !ok {
			r.Notes = append(r.Notes, src.Name+" does not disallow the trap "+cfg.Trap+" for \"*\": as the handler, the audit marks nobody who takes it. "+
				"With source file or inline the handler adds the line: audit with --config, or give the robots.txt as the site serves it")
		}
	}
	return nil
}

// AuditSite is what the audit judges with: the robots handler's options
// and robots.txt (auditSite).
type AuditSite struct {
	// Config is the audit's configuration as far as the handler sets it:
	// the rules, their version, the decision options, strikes, mode,
	// exempt networks, the site block, the undeclared crawlers' modes and
	// trap. The audit adds --site, --host, --max-crawlers and the output.
	Config audit.Config
	// Source is the robots.txt the rules were read from.
	Source *Source
	// TrapRules is the trap path the handler adds to its robots.txt in
	// every group ("" when it adds none).
	TrapRules string
	// Parse reads a changed robots.txt (--robots-new) as the handler would
	// enforce it: with the trap's line and the handler's case folding.
	Parse func(body []byte) *enforce.Robots
}

// auditSite reads the handler's options and robots.txt for caddy robots
// audit as caddy robots check reads them (newCheckEnv), with the audit's
// own option flags (Site.Audit).
func auditSite(env *Env, h Hooks) (*AuditSite, error) {
	ce, err := newCheckEnv(env, h)
	if err != nil {
		return nil, err
	}
	site := ce.site
	cfg, err := site.Audit(env.Flags)
	if err != nil {
		return nil, err
	}
	cfg.Robots, cfg.Unavailable = ce.robots, ce.src.Unavailable
	if ce.version != nil {
		cfg.Version = ce.version.ID
	}
	// The handler keeps strikes and bans per site block: the lines of every
	// host the block serves share them.
	cfg.Block = site.Block
	trapRules := ce.trapRules
	parse := func(body []byte) *enforce.Robots {
		if trapRules != "" {
			body = []byte(site.WithTrapRules(string(body))) // as the judged rules
		}
		return site.Parse(body) // as the handler's own rules
	}
	return &AuditSite{Config: cfg, Source: ce.src, TrapRules: trapRules, Parse: parse}, nil
}

// auditConfig builds the audit's configuration: the handler's options and
// robots.txt as caddy robots check reads them (auditSite), then --site,
// --host and --max-crawlers.
func auditConfig(env *Env, h Hooks) (*AuditSite, error) {
	fl := env.Flags
	cfgPath, _ := fl.GetString("config")
	if cfgPath != "" {
		for _, name := range auditOptionFlags {
			if fl.Changed(name) {
				return nil, fmt.Errorf("--%s: with --config the options are those of the site's robots handler; drop --%s or --config", name, name)
			}
		}
	}
	site, err := auditSite(env, h)
	if err != nil {
		return nil, err
	}
	cfg := &site.Config
	if s, _ := fl.GetString("site"); s != "" {
		cfg.Site = policy.HostOf(s)
	}
	hosts, _ := fl.GetStringArray("host")
	for _, h := range hosts {
		if policy.HostOf(strings.TrimSpace(h)) == "" {
			return nil, fmt.Errorf("--host %q: want a host name", h)
		}
	}
	cfg.Hosts = hosts
	cfg.MaxCrawlers, _ = fl.GetInt("max-crawlers")
	logFormat, _ := fl.GetString("log-format")
	if cfg.LogFormat, err = audit.ParseLogFormat(logFormat); err != nil {
		return nil, err
	}
	return site, nil
}

// feedLogs reads every log given into a, drawing progress on a terminal.
func feedLogs(env *Env, a *audit.Auditor) error {
	var bar *progressBar
	if f, ok := env.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = &progressBar{w: f, start: time.Now()}
	}
	for _, name := range env.Args {
		lf, err := audit.Open(name)
		if err != nil {
			return err
		}
		var tick func()
		if bar != nil {
			tick = func() { bar.draw(lf, a) }
		}
		err = a.Feed(name, lf, tick)
		lf.Close()
		if err != nil {
			return err
		}
		if bar != nil {
			bar.finish(lf, a)
		}
	}
	return nil
}

// progressBar draws one line of progress on a terminal.
type progressBar struct {
	w     io.Writer
	start time.Time
	last  time.Time
}

func (p *progressBar) draw(lf *audit.LogFile, a *audit.Auditor) {
	now := time.Now()
	if now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	lines, _ := a.Stats()
	rate := float64(lines) / max(now.Sub(p.start).Seconds(), 1e-3)
	name := lf.Name
	if len(name) > 30 {
		name = "…" + name[len(name)-29:]
	}
	if lf.Size > 0 {
		frac := min(float64(lf.Done())/float64(lf.Size), 1)
		const width = 24
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %d lines %.0f/s ", name, strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, lines, rate)
		return
	}
	fmt.Fprintf(p.w, "\r%s %d lines %.0f/s ", name, lines, rate)
}

func (p *progressBar) finish(lf *audit.LogFile, a *audit.Auditor) {
	p.last = time.Time{}
	p.draw(lf, a)
	fmt.Fprintln(p.w)
}
