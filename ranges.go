package caddyrobots

// Keeping crawler IP lists current: the loop lives in internal/ranges;
// here are its configuration (verify { ranges, ranges_dir, ranges_refresh,
// ranges_operators }) and its wiring to Caddy. The handler's Provision
// calls, in this order:
//
//	rcfg, err := newRangesConfig(h.Verify)    // parses ranges, ranges_dir, ranges_refresh, ranges_operators
//	vcfg.Ranges, vcfg.RangesAsOf, err = rcfg.LoadFiles() // the lists given as files, with their dates
//	verifier, err := agents.NewVerifier(vcfg)
//	h.releaseRanges, err = startRanges(ctx, verifier, rcfg, h.logger)
//	ranges.WarnStale(h.logger, verifier, rcfg)
//
// and Cleanup calls h.releaseRanges().

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

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
