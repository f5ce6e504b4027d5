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
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/pflag"

	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/cli"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// init registers `caddy robots` (check, lint, audit, ranges; internal/cli)
// with what only this package knows: the handler's options, from flags or
// from the robots handler a config runs for a site, so that `caddy robots
// check` and `caddy robots audit` judge as the server does.
func init() {
	caddycmd.RegisterCommand(cli.Command(cliHooks()))
}

// cliHooks are the handler's side of the robots subcommands.
func cliHooks() cli.Hooks {
	return cli.Hooks{OptionFlags: addOptionFlags, Site: cliSite}
}

// addOptionFlags adds the handler's options that bear on a decision.
func addOptionFlags(f *pflag.FlagSet) {
	f.String("mode", "enforce", "enforce | log (log refuses nothing; the decision is the same)")
	f.String("preferences", "expose", "expose | header | enforce: enforce refuses crawlers whose purpose the AI usage preference excludes")
	f.String("crawl-delay", "on", "on | off | all: which crawlers Crawl-delay applies to")
	f.String("spoofed", "block", "block | wildcard: what a provable impostor gets")
	f.String("libraries", "crawler", "crawler | ignore: whether HTTP libraries are judged")
	f.String("unavailable", "disallow", "disallow | allow: what crawlers get when robots.txt answers 5xx")
	f.Duration("grace", DefaultGrace, "how long a crawler may keep an old robots.txt")
	f.String("strikes", "", "off, or '<count> <window> <ban>' (default 10 10m 1h): whether a refusal counts as a strike")
}

// cliSite reads the handler's options for check and audit: from the
// option flags, or with --config from the robots handler that serves
// --site.
func cliSite(env *cli.Env) (*cli.Site, error) {
	fl := env.Flags
	cfgPath, _ := fl.GetString("config")
	if cfgPath == "" {
		h, err := handlerFromFlags(fl)
		if err != nil {
			return nil, err
		}
		return h.cliSite(nil), nil
	}
	site, _ := fl.GetString("site")
	adapter, _ := fl.GetString("adapter")
	h, hosts, err := handlerFromConfig(cfgPath, adapter, site)
	if err != nil {
		return nil, err
	}
	block := &audit.SiteBlock{Name: "every host", Hosts: hosts}
	if len(hosts) > 0 {
		block.Name = strings.Join(hosts, ", ")
	}
	return h.cliSite(block), nil
}

// cliSite describes h's options for the command line; block is the site
// block it serves, when a config says.
func (h *Handler) cliSite(block *audit.SiteBlock) *cli.Site {
	s := &cli.Site{
		Mode: h.Mode, Libraries: h.Libraries,
		Source: h.Source, File: h.File, Inline: h.Inline,
		Options: h.decisionOptions(),
		Parse:   h.parseRules,
		Block:   block,
		Audit:   h.auditConfig,
	}
	if h.servesTrapRules() {
		trap := h.Trap
		s.Trap = trap
		s.WithTrapRules = func(text string) string { return withTrapRules(text, trap) }
	}
	return s
}

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
	if err := h.takeRenamedOptions(caddy.Log()); err != nil {
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

// auditConfig is the audit's configuration as far as h alone sets it,
// after --crawl-burst, --undeclared, --trap and --trap-hold, checked as the
// config would check them.
func (h *Handler) auditConfig(fl *pflag.FlagSet) (audit.Config, error) {
	if fl.Changed("crawl-burst") {
		h.CrawlBurst, _ = fl.GetInt("crawl-burst")
		if err := h.Validate(); err != nil {
			return audit.Config{}, fmt.Errorf("--crawl-burst: %w", err)
		}
	}
	if err := undeclaredFlags(fl, h); err != nil {
		return audit.Config{}, err
	}
	opts, strikes := h.decisionOptions(), h.strikePolicy()
	cfg := audit.Config{
		Options:         &opts,
		Strikes:         &strikes,
		LogMode:         h.Mode == "log",
		IgnoreLibraries: h.Libraries == "ignore",
		PacePerHost:     h.Source == "site",
	}
	if h.Store != nil {
		cfg.MaxStateEntries = h.Store.MaxEntries
	}
	var err error
	if cfg.Exempt, err = exemptPrefixes(h.Exempt); err != nil {
		return audit.Config{}, fmt.Errorf("the handler's exempt: %w", err)
	}
	// Undeclared crawlers, with the handler's modes and trap.
	modes := policy.NewUndeclaredModes(h.Undeclared, h.UndeclaredSignals, h.Trap != "")
	cfg.Undeclared = &modes
	if modes[policy.SignalTrap] != policy.SignalOff {
		cfg.Trap, cfg.TrapHold = h.Trap, time.Duration(h.TrapHold)
	}
	return cfg, nil
}

// undeclaredFlags sets the handler's undeclared and trap options from
// --undeclared (or its old name --disguised), --trap and --trap-hold
// (without --config), checked as the config would check them.
func undeclaredFlags(fl *pflag.FlagSet, h *Handler) error {
	if fl.Changed("undeclared") && fl.Changed("disguised") {
		return errors.New("--disguised and --undeclared are both given: --disguised is the old name of --undeclared; keep --undeclared only")
	}
	flag := "undeclared"
	if fl.Changed("disguised") {
		flag = "disguised" // pflag has printed that it is deprecated
	}
	if !fl.Changed(flag) && !fl.Changed("trap") && !fl.Changed("trap-hold") {
		return nil
	}
	h.Undeclared, _ = fl.GetString(flag)
	h.Trap, _ = fl.GetString("trap")
	hold, _ := fl.GetDuration("trap-hold")
	if fl.Changed("trap-hold") && h.Trap == "" {
		return errors.New("--trap-hold: give the trap with --trap")
	}
	if h.Trap != "" {
		h.TrapHold = caddy.Duration(hold)
	}
	if errs := h.validateUndeclared(); len(errs) > 0 {
		return fmt.Errorf("--%s, --trap: %w", flag, errors.Join(errs...))
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
