package caddyrobots

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/spf13/pflag"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/cli"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// The handler's options for the robots subcommands: from flags, or from the
// robots handler a config runs for a site, so that `caddy robots check`
// and `caddy robots audit` judge as the server does.

// handlerFromFlags builds a handler's options from the option flags
// (addOptionFlags), checked as the config would check them.
func handlerFromFlags(fl *pflag.FlagSet) (*Handler, error) {
	h := &Handler{}
	h.Mode, _ = fl.GetString("mode")
	h.Preferences, _ = fl.GetString("preferences")
	h.CrawlDelay, _ = fl.GetString("crawl-delay")
	h.Spoofed, _ = fl.GetString("spoofed")
	h.Libraries, _ = fl.GetString("libraries")
	h.Unavailable, _ = fl.GetString("unavailable")
	g, _ := fl.GetDuration("grace")
	grace := caddy.Duration(g)
	h.Grace = &grace
	strikes, _ := fl.GetString("strikes")
	s, err := parseStrikesFlag(strikes)
	if err != nil {
		return nil, err
	}
	h.Strikes = s
	h.applyDefaults()
	if err := h.Validate(); err != nil {
		return nil, err
	}
	return h, nil
}

// parseStrikesFlag reads --strikes: "", "off" or "<count> <window> <ban>".
func parseStrikesFlag(s string) (*StrikesConfig, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return nil, nil
	case "off":
		return &StrikesConfig{Off: true}, nil
	}
	f := strings.Fields(s)
	if len(f) != 3 {
		return nil, fmt.Errorf("--strikes %q: want off or '<count> <window> <ban>'", s)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("--strikes: count %q: want a positive number", f[0])
	}
	w, err := caddy.ParseDuration(f[1])
	if err != nil {
		return nil, fmt.Errorf("--strikes: window: %w", err)
	}
	b, err := caddy.ParseDuration(f[2])
	if err != nil {
		return nil, fmt.Errorf("--strikes: ban: %w", err)
	}
	return &StrikesConfig{Count: n, Window: caddy.Duration(w), Ban: caddy.Duration(b)}, nil
}

// handlerFromConfig reads a Caddyfile (or JSON config) and returns the
// options of the robots handler that serves site (host, or host:port to
// pick the server by its port), with its placeholders replaced. A relative
// source file is read relative to the config's directory when it is not
// found from the working directory. It also returns the host patterns of
// the site block the handler serves (none: every host).
func handlerFromConfig(path, adapter, site string) (*Handler, []string, error) {
	raw, where, hosts, err := cli.HandlerJSON(path, adapter, site)
	if err != nil {
		return nil, nil, err
	}
	h := &Handler{}
	if err := json.Unmarshal(raw, h); err != nil {
		return nil, nil, fmt.Errorf("%s: the robots handler of %s: %w", path, where, err)
	}
	if err := h.replacePlaceholders(); err != nil {
		return nil, nil, err
	}
	h.applyDefaults()
	if h.Source == "file" && !filepath.IsAbs(h.File) {
		if _, err := os.Stat(h.File); err != nil {
			h.File = filepath.Join(filepath.Dir(path), h.File)
		}
	}
	if err := h.Validate(); err != nil {
		return nil, nil, err
	}
	return h, hosts, nil
}

// auditSite reads the handler's options and robots.txt for caddy robots
// audit as caddy robots check reads them (newCheckEnv), with --crawl-burst,
// --disguised and --trap.
func auditSite(env *cli.Env) (*cli.AuditSite, error) {
	fl := env.Flags
	ce, err := newCheckEnv(env)
	if err != nil {
		return nil, err
	}
	h := ce.h
	if fl.Changed("crawl-burst") {
		h.CrawlBurst, _ = fl.GetInt("crawl-burst")
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("--crawl-burst: %w", err)
		}
	}
	if err := disguisedFlags(fl, h); err != nil {
		return nil, err
	}
	opts, strikes := h.decisionOptions(), h.strikePolicy()
	cfg := audit.Config{
		Robots:          ce.robots,
		Unavailable:     ce.src.Unavailable,
		Options:         &opts,
		Strikes:         &strikes,
		LogMode:         h.Mode == "log",
		IgnoreLibraries: h.Libraries == "ignore",
	}
	if ce.version != nil {
		cfg.Version = ce.version.ID
	}
	if h.Store != nil {
		cfg.MaxStateEntries = h.Store.MaxEntries
	}
	if cfg.Exempt, err = exemptPrefixes(h.Exempt); err != nil {
		return nil, fmt.Errorf("the handler's exempt: %w", err)
	}
	// The handler keeps strikes and bans per site block: the lines of every
	// host the block serves share them.
	cfg.Block = ce.block
	cfg.PacePerHost = h.Source == "site"

	// Undeclared crawlers, with the handler's modes and trap.
	modes := policy.NewDisguiseModes(h.Disguised, h.DisguisedSignals, h.Trap != "")
	cfg.Disguised = &modes
	if modes[policy.SignalTrap] != policy.SignalOff {
		cfg.Trap, cfg.TrapHold = h.Trap, time.Duration(h.TrapHold)
	}
	trapRules := ce.trapRules
	parse := func(body []byte) *enforce.Robots {
		if trapRules != "" {
			body = []byte(withTrapRules(string(body), trapRules)) // as the judged rules
		}
		if opts.CaseInsensitive {
			body = enforce.FoldCaseBytes(body) // as the handler's own rules
		}
		return enforce.Parse(body)
	}
	return &cli.AuditSite{Config: cfg, Source: ce.src, TrapRules: trapRules, Parse: parse}, nil
}

// disguisedFlags sets the handler's disguised and trap options from
// --disguised, --trap and --trap-hold (without --config), checked as the
// config would check them.
func disguisedFlags(fl *pflag.FlagSet, h *Handler) error {
	if !fl.Changed("disguised") && !fl.Changed("trap") && !fl.Changed("trap-hold") {
		return nil
	}
	h.Disguised, _ = fl.GetString("disguised")
	h.Trap, _ = fl.GetString("trap")
	hold, _ := fl.GetDuration("trap-hold")
	if fl.Changed("trap-hold") && h.Trap == "" {
		return errors.New("--trap-hold: give the trap with --trap")
	}
	if h.Trap != "" {
		h.TrapHold = caddy.Duration(hold)
	}
	if errs := h.checkDisguised(); len(errs) > 0 {
		return fmt.Errorf("--disguised, --trap: %w", errors.Join(errs...))
	}
	return nil
}

// exemptPrefixes parses exempt networks as the handler does.
func exemptPrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range list {
		p, err := parsePrefix(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
