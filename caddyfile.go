package caddyrobots

import (
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("robots", parseCaddyfile)
	// After header: bots are refused before rewrites, auth round-trips,
	// encode, reverse_proxy and file_server, and users need no order.
	httpcaddyfile.RegisterDirectiveOrder("robots", httpcaddyfile.After, "header")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	robots [<matcher>] {
//		source site | file <path> | inline <robots.txt text>
//		refresh       <duration>             # 1s..24h, default 1h
//		fetch_timeout <duration>             # 100ms..1m, default 5s
//		mode          enforce | log          # log never refuses
//		grace         <duration>             # 0..7d, default 24h
//		crawl_delay   on | off | all         # default on
//		crawl_burst   <n>                    # requests back to back before Crawl-delay applies; default 4
//		spoofed       block | wildcard       # default block
//		libraries     crawler | ignore       # default crawler
//		exempt        <cidr|ip>...          # a CIDR with host bits set (10.1.2.3/8) is an error
//		unavailable   disallow | allow       # default disallow
//		strikes       off | <count> <window> <ban>   # default 10 10m 1h; window 1s..24h, ban 1m..30d
//		store memory [<max_entries>]
//		store redis <url> {
//			prefix      <prefix>             # default caddy-robots
//			timeout     <duration>           # 1ms..10s, default 50ms
//			max_entries <n>                  # local fallback store
//			tls {                            # TLS, also with redis://
//				ca   <file>                  # default: the system's roots
//				cert <file>                  # client certificate, with key
//				key  <file>
//			}
//		}
//		verify {
//			timeout  <duration>              # 100ms..30s, default 2s
//			resolver <ip[:port]>             # port default 53
//			signature_agent <url> [token <t>]  # a Web Bot Auth agent to verify
//			signature_skew  <duration>         # at most 10m, default 60s
//			ranges   <method> <file|url>     # e.g. ranges openai-gptbot /etc/caddy/gptbot.json
//			ranges_dir <dir>                   # <method>.json lists, from caddy robots ranges fetch --out <dir>
//			ranges_refresh   <duration> | off  # operators' IP lists re-fetched; default 12h
//			ranges_operators on | off          # off: only the URLs given with ranges
//		}
//		preferences   expose | header | enforce   # AI usage preferences; default expose
//		robots_txt    serve | pass           # source file/inline: who answers /robots.txt; default serve
//		max_rule_memory <size>               # 16MiB..1TiB, default 64MiB; a unit is required
//		use_error_routes                     # refusals go to handle_errors
//		case_insensitive_paths               # /PRIVATE/ is /private/ (IIS); see the README's cost
//		undeclared [off | log | enforce] {   # undeclared crawlers; default: per signal (old name: disguised)
//			fetch_metadata        off | log | enforce   # default enforce
//			fetch_metadata_safari off | log | enforce   # default log
//			client_hints          off | log | enforce   # default log
//			trap                  off | log | enforce   # default enforce
//		}
//		trap <path> [<hold>]                 # e.g. trap /no-robots/ 24h; hold 1m..7d, default 24h
//		tls_fingerprint_header <name>        # behind a TLS-terminating proxy: its JA4 header, from trusted_proxies only
//	}
//
// A bare `robots` uses every default: the site's own /robots.txt.
//
// Every option is given once (exempt, and signature_agent and ranges in
// verify, may repeat). A duration or size outside its bounds is an error
// naming the option and the line; so is an explicit 0 for refresh, fetch_timeout and the timeouts
// (omit the option to get the default; grace 0 is a real value). Paths and
// addresses (source file, resolver, ranges, the Redis URL, exempt) may use
// placeholders such as {env.ROBOTS_FILE}: they are replaced at provision
// and checked then, and the file of source file must exist at that time.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.Errf("robots: unexpected argument %q; options go in a block", d.Val())
	}
	seen := map[string]bool{}
	var robotsTxtAt error // where robots_txt was given, for an error after the block
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] && opt != "exempt" {
			return d.Errf("robots: option %q given twice", opt)
		}
		if opt == "disguised" && seen["undeclared"] || opt == "undeclared" && seen["disguised"] {
			return d.Errf("robots: disguised and undeclared are both given: disguised is the old name of undeclared; keep undeclared only")
		}
		seen[opt] = true
		err := h.parseOption(d, opt)
		if opt == "robots_txt" {
			robotsTxtAt = d.Errf("robots: robots_txt applies to source file and inline; with source site the site itself always answers /robots.txt")
		}
		if err != nil {
			return err
		}
	}
	if robotsTxtAt != nil && (h.Source == "" || h.Source == "site") {
		return robotsTxtAt
	}
	return nil
}

// parseOption reads one option of the robots block, named opt.
func (h *Handler) parseOption(d *caddyfile.Dispenser, opt string) error {
	switch opt {
	case "source":
		return h.parseSource(d)
	case "refresh":
		return parseDurationIn(d, opt, &h.Refresh, MinRefresh, MaxRefresh, false)
	case "fetch_timeout":
		return parseDurationIn(d, opt, &h.FetchTimeout, MinFetchTimeout, MaxFetchTimeout, false)
	case "grace":
		var g caddy.Duration
		err := parseDurationIn(d, opt, &g, 0, MaxGrace, true)
		h.Grace = &g
		return err
	case "mode":
		return parseEnum(d, opt, &h.Mode, "enforce", "log")
	case "crawl_delay":
		return parseEnum(d, opt, &h.CrawlDelay, "on", "off", "all")
	case "spoofed":
		return parseEnum(d, opt, &h.Spoofed, "block", "wildcard")
	case "libraries":
		return parseEnum(d, opt, &h.Libraries, "crawler", "ignore")
	case "unavailable":
		return parseEnum(d, opt, &h.Unavailable, "disallow", "allow")
	case "exempt":
		return h.parseExempt(d)
	case "strikes":
		return h.parseStrikes(d)
	case "store":
		return h.parseStore(d)
	case "verify":
		return h.parseVerify(d)
	case "crawl_burst":
		return h.parseCrawlBurst(d)
	case "preferences":
		return parseEnum(d, opt, &h.Preferences, "expose", "header", "enforce")
	case "robots_txt":
		return parseEnum(d, opt, &h.RobotsTxt, "serve", "pass")
	case "max_rule_memory":
		return h.parseMaxRuleMemory(d)
	case "undeclared":
		return h.parseUndeclared(d, opt) // undeclared.go
	case "disguised":
		caddy.Log().Named("config.adapter.caddyfile").Warn("robots: disguised is now undeclared; rename it in the Caddyfile (the old name will be removed)",
			zap.String("file", d.File()), zap.Int("line", d.Line()))
		return h.parseUndeclared(d, opt)
	case "trap":
		return h.parseTrap(d)
	case "tls_fingerprint_header":
		if !d.AllArgs(&h.TLSFingerprintHeader) {
			return d.Errf("robots: tls_fingerprint_header takes one header name")
		}
		if !validHeaderName(h.TLSFingerprintHeader) { // fingerprint.go
			return d.Errf("robots: tls_fingerprint_header %q is not a header name", h.TLSFingerprintHeader)
		}
		return nil
	case "use_error_routes":
		return parseFlag(d, opt, &h.UseErrorRoutes)
	case "case_insensitive_paths":
		return parseFlag(d, opt, &h.CaseInsensitivePaths)
	}
	return d.Errf("robots: unrecognized option %q", opt)
}

// parseExempt reads `exempt <network>...`; it may be given more than once.
func (h *Handler) parseExempt(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.Errf("robots: exempt needs at least one network")
	}
	for _, a := range args {
		if hasPlaceholder(a) {
			continue // checked at provision, once replaced
		}
		if _, err := parsePrefix(a); err != nil {
			return d.Errf("robots: exempt: %v", err)
		}
	}
	h.Exempt = append(h.Exempt, args...)
	return nil
}

// parseCrawlBurst reads `crawl_burst <requests>`.
func (h *Handler) parseCrawlBurst(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.Errf("robots: crawl_burst needs a number of requests")
	}
	n, err := strconv.Atoi(d.Val())
	if err != nil || n < 1 || n > state.MaxBurst {
		return d.Errf("robots: crawl_burst: %q is not a number of requests in 1..%d", d.Val(), state.MaxBurst)
	}
	if d.NextArg() {
		return d.Errf("robots: crawl_burst takes one number")
	}
	h.CrawlBurst = n
	return nil
}

// parseMaxRuleMemory reads `max_rule_memory <size>`, a size with a unit.
func (h *Handler) parseMaxRuleMemory(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.Errf("robots: max_rule_memory needs a size, e.g. 64MiB")
	}
	n, err := parseSize("max_rule_memory", d.Val())
	if err == nil {
		err = checkRuleMemory(n)
	}
	if err != nil {
		return d.Errf("robots: %v", err)
	}
	if d.NextArg() {
		return d.Errf("robots: max_rule_memory takes one size")
	}
	h.MaxRuleMemory = n
	return nil
}

// parseFlag reads an option that takes no argument and sets *v.
func parseFlag(d *caddyfile.Dispenser, opt string, v *bool) error {
	if d.NextArg() {
		return d.Errf("robots: %s takes no argument", opt)
	}
	*v = true
	return nil
}

func (h *Handler) parseSource(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.Errf("robots: source needs site, file <path> or inline <text>")
	}
	switch args[0] {
	case "site":
		if len(args) != 1 {
			return d.Errf("robots: source site takes no further argument")
		}
	case "file":
		if len(args) != 2 {
			return d.Errf("robots: source file needs exactly one path")
		}
		h.File = args[1]
	case "inline":
		if len(args) != 2 {
			return d.Errf("robots: source inline needs exactly one text argument (quote it, or use a heredoc)")
		}
		// A quoted Caddyfile string keeps backslashes as written, so
		// "\n" is read as a line break here (a heredoc needs no escapes).
		h.Inline = strings.ReplaceAll(args[1], `\n`, "\n")
		if ph := inlinePlaceholder(h.Inline); ph != "" {
			return d.Errf("robots: source inline: %s is not replaced in inline text, so crawlers would read it as written; write the value, or use source file", ph)
		}
	default:
		return d.Errf("robots: source: unknown source %q (want site, file or inline)", args[0])
	}
	h.Source = args[0]
	return nil
}

func (h *Handler) parseStrikes(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) == 1 && args[0] == "off" {
		h.Strikes = &StrikesConfig{Off: true}
		return nil
	}
	if len(args) != 3 {
		return d.Errf("robots: strikes needs off, or <count> <window> <ban>")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return d.Errf("robots: strikes: count %q is not a positive number", args[0])
	}
	window, err := caddy.ParseDuration(args[1])
	if err != nil {
		return d.Errf("robots: strikes: bad window %q", args[1])
	}
	ban, err := caddy.ParseDuration(args[2])
	if err != nil {
		return d.Errf("robots: strikes: bad ban duration %q", args[2])
	}
	if err := checkStrikes(window, ban); err != nil {
		return d.Errf("robots: %v", err)
	}
	h.Strikes = &StrikesConfig{Count: n, Window: caddy.Duration(window), Ban: caddy.Duration(ban)}
	return nil
}

func (h *Handler) parseStore(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.Errf("robots: store needs memory or redis")
	}
	s := &StoreConfig{Type: d.Val()}
	switch s.Type {
	case "memory":
		if d.NextArg() {
			n, err := strconv.Atoi(d.Val())
			if err != nil || n < 1 {
				return d.Errf("robots: store memory: max_entries %q is not a positive number", d.Val())
			}
			s.MaxEntries = n
		}
		if d.NextArg() {
			return d.Errf("robots: store memory takes at most one argument")
		}
		if d.NextBlock(d.Nesting()) {
			return d.Errf("robots: store memory takes no block")
		}
	case "redis":
		if !d.NextArg() {
			return d.Errf("robots: store redis needs a URL")
		}
		s.URL = d.Val()
		if !hasPlaceholder(s.URL) {
			if _, err := state.ParseRedisURL(s.URL); err != nil {
				return d.Errf("robots: store redis: %v", err)
			}
		}
		if d.NextArg() {
			return d.Errf("robots: store redis takes one URL; options go in a block")
		}
		seen := map[string]bool{}
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			opt := d.Val()
			if seen[opt] {
				return d.Errf("robots: store redis: option %q given twice", opt)
			}
			seen[opt] = true
			switch opt {
			case "prefix":
				if !d.NextArg() || d.Val() == "" {
					return d.Errf("robots: store redis: prefix needs a value")
				}
				s.Prefix = d.Val()
				if d.NextArg() {
					return d.Errf("robots: store redis: prefix takes one value")
				}
			case "timeout":
				if err := parseDurationIn(d, "store redis timeout", &s.Timeout, MinRedisTimeout, MaxRedisTimeout, false); err != nil {
					return err
				}
			case "max_entries":
				if !d.NextArg() {
					return d.Errf("robots: store redis: max_entries needs a number")
				}
				n, err := strconv.Atoi(d.Val())
				if err != nil || n < 1 {
					return d.Errf("robots: store redis: max_entries %q is not a positive number", d.Val())
				}
				s.MaxEntries = n
			case "tls":
				if err := parseStoreTLS(d, s); err != nil {
					return err
				}
			default:
				return d.Errf("robots: store redis: unrecognized option %q", opt)
			}
		}
	default:
		return d.Errf("robots: store: unknown store %q (want memory or redis)", s.Type)
	}
	h.Store = s
	return nil
}

// parseStoreTLS parses store redis's tls block: ca, cert and key, each a
// file, each at most once.
func parseStoreTLS(d *caddyfile.Dispenser, s *StoreConfig) error {
	if d.NextArg() {
		return d.Errf("robots: store redis: tls takes no argument; files go in its block (ca, cert, key)")
	}
	s.TLS = &StoreTLSConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		var dst *string
		switch opt {
		case "ca":
			dst = &s.TLS.CA
		case "cert":
			dst = &s.TLS.Cert
		case "key":
			dst = &s.TLS.Key
		default:
			return d.Errf("robots: store redis: tls: unrecognized option %q (want ca, cert or key)", opt)
		}
		if *dst != "" {
			return d.Errf("robots: store redis: tls: %s given twice", opt)
		}
		if !d.NextArg() || d.Val() == "" {
			return d.Errf("robots: store redis: tls: %s needs a file", opt)
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.Errf("robots: store redis: tls: %s takes one file", opt)
		}
	}
	if (s.TLS.Cert == "") != (s.TLS.Key == "") {
		return d.Errf("robots: store redis: tls: cert and key go together (give both or neither)")
	}
	return nil
}

func (h *Handler) parseVerify(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.Errf("robots: verify takes a block, not arguments")
	}
	v := &VerifyConfig{}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		// signature_agent and ranges may repeat (one per agent, one per
		// method); every other option is given once.
		if seen[opt] && opt != "signature_agent" && opt != "ranges" {
			return d.Errf("robots: verify: option %q given twice", opt)
		}
		seen[opt] = true
		switch opt {
		case "timeout":
			if err := parseDurationIn(d, "verify timeout", &v.Timeout, MinVerifyTimeout, MaxVerifyTimeout, false); err != nil {
				return err
			}
		case "signature_agent":
			args := d.RemainingArgs()
			if len(args) != 1 && !(len(args) == 3 && args[1] == "token") {
				return d.Errf("robots: verify: signature_agent needs <url> [token <robots.txt token>]")
			}
			sa := SignatureAgentConfig{URL: args[0]}
			if len(args) == 3 {
				sa.Token = args[2]
			}
			v.SignatureAgents = append(v.SignatureAgents, sa)
		case "signature_skew":
			if err := parseDurationIn(d, "verify signature_skew", &v.SignatureSkew, 0, MaxSignatureSkew, true); err != nil {
				return err
			}
		case "resolver":
			if !d.NextArg() {
				return d.Errf("robots: verify: resolver needs an address (ip[:port])")
			}
			v.Resolver = d.Val()
			if !hasPlaceholder(v.Resolver) {
				if _, err := checkResolver(v.Resolver); err != nil {
					return d.Errf("robots: %v", err)
				}
			}
			if d.NextArg() {
				return d.Errf("robots: verify: resolver takes one address")
			}
		case "ranges":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("robots: verify: ranges needs <method> <file> or <method> <https-url>, e.g. ranges openai-gptbot /etc/caddy/gptbot.json")
			}
			if err := ranges.CheckMethod(args[0]); err != nil {
				return d.Errf("robots: verify: %v", err)
			}
			if v.Ranges == nil {
				v.Ranges = map[string]string{}
			}
			if _, dup := v.Ranges[args[0]]; dup {
				return d.Errf("robots: verify: ranges for %q given twice", args[0])
			}
			v.Ranges[args[0]] = args[1]
		case "ranges_dir":
			args := d.RemainingArgs()
			if len(args) != 1 {
				return d.Errf("robots: verify: ranges_dir needs one directory, e.g. ranges_dir /var/lib/caddy/ranges (written by caddy robots ranges fetch --out DIR)")
			}
			v.RangesDir = args[0]
		case "ranges_refresh":
			args := d.RemainingArgs()
			if len(args) != 1 {
				return d.Errf("robots: verify: ranges_refresh needs a duration or off")
			}
			if _, err := parseRangesRefresh(args[0]); err != nil {
				return d.Errf("robots: verify: ranges_refresh: %v", err)
			}
			v.RangesRefresh = args[0]
		case "ranges_operators":
			if err := parseEnum(d, "verify ranges_operators", &v.RangesOperators, "on", "off"); err != nil {
				return err
			}
		default:
			return d.Errf("robots: verify: unrecognized option %q", opt)
		}
	}
	h.Verify = v
	return nil
}

func parseDuration(d *caddyfile.Dispenser, opt string, dst *caddy.Duration) error {
	if !d.NextArg() {
		return d.Errf("robots: %s needs a duration", opt)
	}
	dur, err := caddy.ParseDuration(d.Val())
	if err != nil {
		return d.Errf("robots: %s: bad duration %q: %v", opt, d.Val(), err)
	}
	if dur < 0 {
		return d.Errf("robots: %s: duration must not be negative", opt)
	}
	if d.NextArg() {
		return d.Errf("robots: %s takes one duration", opt)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// parseDurationIn reads one duration for opt into dst and checks it is
// within lo..hi, so that a value out of range is reported with the
// Caddyfile line. 0 is an error unless zeroOK: writing an option sets it,
// and omitting it gives the default.
func parseDurationIn(d *caddyfile.Dispenser, opt string, dst *caddy.Duration, lo, hi time.Duration, zeroOK bool) error {
	var v caddy.Duration
	if err := parseDuration(d, opt, &v); err != nil {
		return err
	}
	if v == 0 && !zeroOK {
		return d.Errf("robots: %s 0 is not allowed: omit %s for the default, or give %s..%s", opt, opt, fmtBound(lo), fmtBound(hi))
	}
	if time.Duration(v) < lo || time.Duration(v) > hi {
		return d.Errf("robots: %s: %s is outside %s..%s", opt, d.Val(), fmtBound(lo), fmtBound(hi))
	}
	*dst = v
	return nil
}

func parseEnum(d *caddyfile.Dispenser, opt string, dst *string, allowed ...string) error {
	if !d.NextArg() {
		return d.Errf("robots: %s needs one of %v", opt, allowed)
	}
	val := d.Val()
	if d.NextArg() {
		return d.Errf("robots: %s takes one value", opt)
	}
	for _, a := range allowed {
		if val == a {
			*dst = val
			return nil
		}
	}
	return d.Errf("robots: %s: unknown value %q (want one of %v)", opt, val, allowed)
}

// Interface guard.
var _ caddyfile.Unmarshaler = (*Handler)(nil)
