package caddyrobots

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// parseDisguised reads `disguised [off|log|enforce] [{ <signal> <mode> ... }]`.
func (h *Handler) parseDisguised(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch len(args) {
	case 0:
	case 1:
		if !validDisguisedMode(args[0]) {
			return d.Errf("robots: disguised: unknown value %q (want off, log or enforce)", args[0])
		}
		h.Disguised = args[0]
	default:
		return d.Errf("robots: disguised takes one mode (off, log or enforce) and an optional block of signals")
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sig := d.Val()
		if !isSignalName(sig) {
			return d.Errf("robots: disguised: unknown signal %q (want fetch_metadata, fetch_metadata_safari, client_hints or trap)", sig)
		}
		if _, dup := h.DisguisedSignals[sig]; dup {
			return d.Errf("robots: disguised: signal %q given twice", sig)
		}
		var mode string
		if err := parseEnum(d, "disguised "+sig, &mode, "off", "log", "enforce"); err != nil {
			return err
		}
		if h.DisguisedSignals == nil {
			h.DisguisedSignals = map[string]string{}
		}
		h.DisguisedSignals[sig] = mode
	}
	if len(args) == 0 && len(h.DisguisedSignals) == 0 {
		return d.Errf("robots: disguised needs a mode (off, log or enforce) or a block of signals")
	}
	return nil
}

// parseTrap reads `trap <path> [<hold>]`.
func (h *Handler) parseTrap(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return d.Errf("robots: trap needs a path and an optional hold duration, e.g. trap /no-robots/ 24h")
	}
	if err := checkTrapPath(args[0]); err != nil {
		return d.Errf("robots: %v", err)
	}
	h.Trap = args[0]
	if len(args) == 2 {
		hold, err := caddy.ParseDuration(args[1])
		if err != nil {
			return d.Errf("robots: trap: bad hold duration %q: %v", args[1], err)
		}
		if err := checkDuration("trap hold", hold, MinTrapHold, MaxTrapHold); err != nil {
			return d.Errf("robots: %v", err)
		}
		h.TrapHold = caddy.Duration(hold)
	}
	return nil
}
