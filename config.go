package caddyrobots

// Configuration checks that make a bad configuration fail when it is loaded
// (caddy adapt, caddy validate, a reload) instead of misbehaving later.
//
// Zero values have one meaning throughout: in the JSON config, an omitted
// field (or 0, which JSON cannot tell apart from omitted) means the
// default; in the Caddyfile, writing an option means setting it, so an
// explicit `refresh 0`, `fetch_timeout 0`, `timeout 0` (store redis,
// verify) is an error that names the option. The one duration where 0 is
// a real value is grace (judge every crawler by the current version only).
//
// Placeholders: every path or address (source file, verify resolver,
// verify ranges, store redis URL, exempt) may use Caddy's global
// placeholders ({env.NAME}, {system.hostname}, {file.PATH}, ...); they are
// replaced at provision, as Caddy's own modules do, so secrets stay out of
// the JSON. The Caddyfile parser checks a value only when it holds no
// placeholder; provision checks the replaced value.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/dustin/go-humanize"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

// Bounds of the durations. A value outside them is refused when the config
// loads: by the Caddyfile parser (with the file and line) and by Validate
// (JSON).
const (
	// MinRefresh is the shortest refresh; MaxRefresh the longest.
	MinRefresh = time.Second
	// MinFetchTimeout and MaxFetchTimeout bound fetch_timeout: below
	// 100ms no load of a real site can finish; past a minute a stalled
	// backend holds a load for longer than any crawler waits.
	MinFetchTimeout = 100 * time.Millisecond
	MaxFetchTimeout = time.Minute
	// MinRedisTimeout and MaxRedisTimeout bound store redis { timeout }:
	// each Redis call is made while a request waits.
	MinRedisTimeout = time.Millisecond
	MaxRedisTimeout = 10 * time.Second
	// MinVerifyTimeout and MaxVerifyTimeout bound verify { timeout }, the
	// time one reverse-DNS verification may take.
	MinVerifyTimeout = 100 * time.Millisecond
	MaxVerifyTimeout = 30 * time.Second
	// defaultDNSPort is the port of a verify resolver given without one.
	defaultDNSPort = "53"

	// MinStrikeWindow and MaxStrikeWindow bound the strikes window: below
	// a second no crawler's refusals can add up, so bans never happen.
	MinStrikeWindow = time.Second
	MaxStrikeWindow = 24 * time.Hour
	// MinStrikeBan and MaxStrikeBan bound a ban: below a minute a ban
	// lifts before a crawler's next visit, past 30 days it outlives any
	// mistake worth punishing (lift bans early with DELETE /robots/bans).
	MinStrikeBan = time.Minute
	MaxStrikeBan = 30 * 24 * time.Hour
	// MaxSignatureSkew bounds verify { signature_skew }: a longer skew
	// lets a captured Web Bot Auth signature be replayed for that long.
	MaxSignatureSkew = 10 * time.Minute
	// MinRuleMemory is the smallest max_rule_memory: room for one
	// robots.txt of the largest size read (enforce.MaxSize, 500 KiB),
	// whose parsed form is estimated at 24 times its size (12 MiB). With
	// less, a large file would find no room, no version would ever load
	// and every bot would get 503 for good. MaxRuleMemory bounds it from
	// above (1 TiB).
	MinRuleMemory = 16 << 20
	MaxRuleMemory = 1 << 40
)

// checkDuration reports d outside lo..hi as an error naming opt.
func checkDuration(opt string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s: %s is outside %s..%s", opt, fmtBound(d), fmtBound(lo), fmtBound(hi))
	}
	return nil
}

// checkStrikes checks the bounds of a strikes window and ban duration.
func checkStrikes(window, ban time.Duration) error {
	if err := checkDuration("strikes window", window, MinStrikeWindow, MaxStrikeWindow); err != nil {
		return err
	}
	return checkDuration("strikes ban", ban, MinStrikeBan, MaxStrikeBan)
}

// checkRuleMemory checks a max_rule_memory in bytes (0: the default).
func checkRuleMemory(n int64) error {
	switch {
	case n < 0:
		return errors.New("max_rule_memory must not be negative")
	case n != 0 && (n < MinRuleMemory || n > MaxRuleMemory):
		return fmt.Errorf("max_rule_memory: %s is outside 16MiB..1TiB (a robots.txt of 500 KiB takes about 12 MiB parsed; with less room no version loads and every bot gets 503)", humanize.IBytes(uint64(n)))
	}
	return nil
}

// parseSize reads a size that has a unit (KiB, MiB, GiB, KB, MB, ...): a
// bare number is refused, because `max_rule_memory 64` meant as 64 MiB
// would be 64 bytes.
func parseSize(opt, s string) (int64, error) {
	unit := strings.TrimLeft(s, "0123456789. ")
	if unit == "" {
		return 0, fmt.Errorf("%s: %q has no unit: sizes need one, e.g. %sMiB (units: KiB, MiB, GiB, KB, MB, GB)", opt, s, s)
	}
	n, err := humanize.ParseBytes(s)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%s: bad size %q (want e.g. 64MiB)", opt, s)
	}
	return int64(n), nil
}

// fmtBound formats a duration as people write it: 7d, 24h, 1m, 100ms.
func fmtBound(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d > 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// hasPlaceholder reports whether s holds a {placeholder}; such a value is
// checked only once it is replaced, at provision.
func hasPlaceholder(s string) bool {
	return strings.Contains(s, "{") && strings.Contains(s, "}")
}

// checkResolver checks a verify resolver address and returns it as
// host:port. The host must be an IP address (a resolver named by a host
// name would need DNS to find DNS); a missing port means 53, as in Caddy's
// own resolver options.
func checkResolver(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// No port: "192.0.2.1", "2001:db8::1" or "[2001:db8::1]".
		host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), defaultDNSPort
	}
	ip, perr := netip.ParseAddr(host)
	if perr != nil {
		return "", fmt.Errorf("verify resolver: %q is not an IP address with an optional port (e.g. 127.0.0.1:53 or [::1]:53)", addr)
	}
	n, perr := strconv.Atoi(port)
	if perr != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("verify resolver: %q has no valid port (1-65535)", addr)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// checkConfig runs at provision, after the defaults: it replaces the
// placeholders of every path and address, checks the bounds (Validate) and
// that a source file can be read, so that a configuration that cannot work
// fails now, naming the option, instead of misbehaving once it runs.
func (h *Handler) checkConfig() error {
	if err := h.takeRenamedOptions(h.logger); err != nil {
		return err
	}
	if err := h.replacePlaceholders(); err != nil {
		return fmt.Errorf("robots: %w", err)
	}
	if err := h.Validate(); err != nil {
		return err
	}
	if h.Source == "file" {
		if err := checkReadable(h.File); err != nil {
			return fmt.Errorf("robots: source file: %w", err)
		}
	}
	return nil
}

// takeRenamedOptions moves the options given under their old names into
// the new ones, warning through log (nil: no warning) that the config
// should be updated: disguised is now undeclared and disguised_signals
// undeclared_signals. A config that gives an option under both names is an
// error naming both, as nothing says which was meant.
func (h *Handler) takeRenamedOptions(log *zap.Logger) error {
	var errs []error
	if h.Disguised != "" {
		if h.Undeclared != "" {
			errs = append(errs, errors.New("disguised and undeclared are both set: disguised is the old name of undeclared; keep undeclared only"))
		} else {
			h.Undeclared, h.Disguised = h.Disguised, ""
			warnRenamed(log, "disguised", "undeclared")
		}
	}
	if h.DisguisedSignals != nil {
		if h.UndeclaredSignals != nil {
			errs = append(errs, errors.New("disguised_signals and undeclared_signals are both set: disguised_signals is the old name of undeclared_signals; keep undeclared_signals only"))
		} else {
			h.UndeclaredSignals, h.DisguisedSignals = h.DisguisedSignals, nil
			warnRenamed(log, "disguised_signals", "undeclared_signals")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("robots: %w", errors.Join(errs...))
	}
	return nil
}

// warnRenamed says that the option oldName is now called newName.
func warnRenamed(log *zap.Logger, oldName, newName string) {
	if log != nil {
		log.Warn("robots: "+oldName+" is now "+newName+"; rename it in the config (the old name will be removed)",
			zap.String("option", oldName), zap.String("new_name", newName))
	}
}

// replacePlaceholders replaces the global placeholders in the paths and
// addresses of the config, in place, and normalises the verify resolver.
// A value that is empty once replaced is an error naming the option and the
// value as written. The Redis URL is only checked here: it may hold a
// password, so provisionStore replaces it again rather than keeping it in
// the config.
func (h *Handler) replacePlaceholders() error {
	repl := caddy.NewReplacer()
	replace := func(opt, raw string) (string, error) {
		if !hasPlaceholder(raw) {
			return raw, nil
		}
		out := strings.TrimSpace(repl.ReplaceKnown(raw, ""))
		if out == "" {
			return "", fmt.Errorf("%s: the value is empty after replacing placeholders (%s)", opt, raw)
		}
		return out, nil
	}
	var err error
	if h.File, err = replace("source file", h.File); err != nil {
		return err
	}
	var exempt []string
	for _, e := range h.Exempt {
		if !hasPlaceholder(e) {
			exempt = append(exempt, e)
			continue
		}
		out, err := replace("exempt", e)
		if err != nil {
			return err
		}
		// One placeholder may hold a list: "10.0.0.0/8, 192.0.2.7".
		exempt = append(exempt, strings.FieldsFunc(out, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })...)
	}
	h.Exempt = exempt
	if v := h.Verify; v != nil {
		if v.Resolver != "" {
			if v.Resolver, err = replace("verify resolver", v.Resolver); err != nil {
				return err
			}
			if v.Resolver, err = checkResolver(v.Resolver); err != nil {
				return err
			}
		}
		for method, src := range v.Ranges {
			if v.Ranges[method], err = replace("verify ranges for "+method, src); err != nil {
				return err
			}
		}
	}
	if s := h.Store; s != nil && s.Type == "redis" && s.URL != "" &&
		strings.TrimSpace(repl.ReplaceAll(s.URL, "")) == "" {
		return fmt.Errorf("store redis: the URL is empty after replacing placeholders (%s)", s.URL)
	}
	return nil
}

// checkReadable fails when path cannot be opened and read: a robots.txt
// file that is missing when Caddy starts is a mistake, not a file that
// will appear later (one that disappears later keeps the last good copy).
func checkReadable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w (the file must exist and be readable when the config loads)", path, err)
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("cannot read %s: %w (the file must exist and be readable when the config loads)", path, err)
	}
	return nil
}

// applyDefaults fills the options left empty with their defaults. Provision
// calls it, and so does `caddy robots check --config`, which judges with a
// handler's options without provisioning it.
func (h *Handler) applyDefaults() {
	setDefault := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setDefault(&h.Source, "site")
	setDefault(&h.Mode, "enforce")
	setDefault(&h.CrawlDelay, "on")
	setDefault(&h.Spoofed, "block")
	setDefault(&h.Libraries, "crawler")
	setDefault(&h.Unavailable, "disallow")
	setDefault(&h.RobotsTxt, "serve")
	setDefault(&h.Preferences, "expose")
	if h.Refresh == 0 {
		h.Refresh = caddy.Duration(DefaultRefresh)
	}
	if h.FetchTimeout == 0 {
		h.FetchTimeout = caddy.Duration(DefaultFetchTimeout)
	}
	if h.Grace == nil {
		g := caddy.Duration(DefaultGrace)
		h.Grace = &g
	}
	// undeclared: empty means each signal's own default (undeclared.go).
	if h.Trap != "" && h.TrapHold == 0 {
		h.TrapHold = caddy.Duration(DefaultTrapHold)
	}
}

// strikePolicy is the strike policy the config asks for.
func (h *Handler) strikePolicy() state.StrikePolicy {
	p := state.DefaultStrikePolicy()
	s := h.Strikes
	switch {
	case s == nil:
	case s.Off:
		p.Strikes = 0
	default:
		if s.Count > 0 {
			p.Strikes = s.Count
		}
		if s.Window > 0 {
			p.Window = time.Duration(s.Window)
		}
		if s.Ban > 0 {
			p.Ban = time.Duration(s.Ban)
		}
	}
	return p
}

// decisionOptions are the options of the decision (policy.Assess) that the
// config asks for; the config has its defaults (applyDefaults).
func (h *Handler) decisionOptions() policy.Options {
	o := policy.Options{
		Grace:               time.Duration(*h.Grace),
		MaxGrace:            MaxGrace,
		Burst:               h.CrawlBurst,
		SpoofedBlock:        h.Spoofed == "block",
		UnavailableDisallow: h.Unavailable == "disallow",
		Preferences:         h.Preferences == "enforce",
		Strikes:             h.strikePolicy().Enabled(),
		CaseInsensitive:     h.CaseInsensitivePaths,
	}
	if o.Burst == 0 {
		o.Burst = state.DefaultBurst
	}

	switch h.CrawlDelay {
	case "off":
		o.CrawlDelay = policy.CrawlDelayOff
	case "all":
		o.CrawlDelay = policy.CrawlDelayAll
	}
	return o
}

// parseRules parses a robots.txt body as the handler's rules: case-folded
// with case_insensitive_paths (the sites table does the same for the
// handler's own loads).
func (h *Handler) parseRules(body []byte) *enforce.Robots {
	if h.CaseInsensitivePaths {
		return enforce.Parse(enforce.FoldCaseBytes(body))
	}
	return enforce.Parse(body)
}

// Keeping crawler IP lists current: the loop lives in internal/ranges;
// here are its configuration (verify { ranges, ranges_dir, ranges_refresh,
// ranges_operators }) and its wiring to Caddy. The handler's
// provisionVerifier calls, in this order:
//
//	rcfg, err := newRangesConfig(h.Verify)    // parses ranges, ranges_dir, ranges_refresh, ranges_operators
//	vcfg.Ranges, vcfg.RangesAsOf, err = rcfg.LoadFiles() // the lists given as files, with their dates
//	verifier, err := agents.NewVerifier(vcfg)
//	h.releaseRanges, err = startRanges(ctx, verifier, rcfg, h.logger)
//	ranges.WarnStale(h.logger, verifier, rcfg)
//
// and Cleanup calls h.releaseRanges().

// DefaultRangesRefresh is how often the operators' IP lists are downloaded
// again when verify { ranges_refresh } is not set.
const DefaultRangesRefresh = ranges.DefaultRefresh

// RangesOperatorsEnv names an environment variable that, set to "off",
// turns verify { ranges_operators } off for the whole process: no
// operator's URL is downloaded, only URLs given with ranges. Test suites
// and builds that must never reach the internet set it.
const RangesOperatorsEnv = ranges.OperatorsEnv

// newRangesConfig parses v (nil is the default configuration).
func newRangesConfig(v *VerifyConfig) (ranges.Config, error) {
	if v == nil {
		v = &VerifyConfig{}
	}
	refresh, err := parseRangesRefresh(v.RangesRefresh)
	if err != nil {
		return ranges.Config{}, fmt.Errorf("ranges_refresh: %w", err)
	}
	operators := true
	switch v.RangesOperators {
	case "", "on":
	case "off":
		operators = false
	default:
		return ranges.Config{}, fmt.Errorf("ranges_operators: unknown value %q (want on or off)", v.RangesOperators)
	}
	cfg, err := ranges.NewConfig(refresh, operators, v.Ranges)
	if err != nil || v.RangesDir == "" {
		return cfg, err
	}
	if err := cfg.AddDir(v.RangesDir); err != nil {
		return ranges.Config{}, err
	}
	return cfg, nil
}

// rangesSources is the file or URL each method's list comes from instead
// of the operators' URLs, for the status page: the ranges lines, and the
// files of ranges_dir (the directory is listed again; the lists
// themselves were read when the config loaded).
func rangesSources(v *VerifyConfig) map[string]string {
	cfg, err := newRangesConfig(v)
	if err != nil {
		return v.Ranges
	}
	out := make(map[string]string, len(cfg.Files)+len(cfg.URLs))
	for m, f := range cfg.Files {
		out[m] = f
	}
	for m, u := range cfg.URLs {
		out[m] = u
	}
	return out
}

// parseRangesRefresh reads a ranges_refresh value: empty (the default),
// "off" (0) or a duration of at least one second.
func parseRangesRefresh(s string) (time.Duration, error) {
	switch s {
	case "":
		return DefaultRangesRefresh, nil
	case "off":
		return 0, nil
	}
	d, err := caddy.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: %w", s, err)
	}
	if d < time.Second {
		return 0, fmt.Errorf("%s is shorter than 1s (use off to stop downloads)", d)
	}
	return d, nil
}

// startRanges registers the IP list metrics and subscribes v to the
// download loop of cfg, which keeps its lists in Caddy's storage and logs
// to Caddy's process logger (a loop outlives the configuration that
// started it). It never blocks; the returned release is for Cleanup.
func startRanges(ctx caddy.Context, v *agents.Verifier, cfg ranges.Config, logger *zap.Logger) (release func() error, err error) {
	if err := registerRangesMetrics(ctx.GetMetricsRegistry()); err != nil {
		return nil, fmt.Errorf("robots: registering IP list metrics: %w", err)
	}
	return ranges.Start(contextStorage(ctx), v, cfg, caddy.Log().Named("http.handlers.robots.ranges"), logger)
}

// registerRangesMetrics registers the IP lists' collectors with reg.
func registerRangesMetrics(reg prometheus.Registerer) error {
	return registerCollectors(reg, ranges.Collectors()...)
}

// contextStorage is ctx.Storage(), or nil for a context without a Caddy
// configuration (unit tests), where Storage panics.
func contextStorage(ctx caddy.Context) (s ranges.Storage) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	if st := ctx.Storage(); st != nil {
		return st
	}
	return nil
}
