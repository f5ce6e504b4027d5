package caddyrobots

import (
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// Caddy events. The handler emits these through the config's events app
// (caddy.events), so that operators can hook them with `events { on <name>
// <handler> }` (an exec or webhook handler module) as they hook Caddy's own
// cert_obtained. Their data are flat strings and numbers, read in a
// handler's arguments as {event.data.<key>}.
const (
	// EventCrawlerBanned is emitted when a strike starts a ban. Data:
	// crawler, token, identity (the key DELETE /robots/bans/<identity>
	// takes), address (the banned address or network), site (the site
	// block that issued it), host (the Host of the request that earned
	// it), until (RFC 3339), seconds, strikes, line (the rule broken last),
	// version (of robots.txt), mode ("enforce", or "log" for a ban that
	// mode log only records).
	EventCrawlerBanned = "robots_crawler_banned"
	// EventBanLifted is emitted for each ban lifted through the admin API.
	// Data: identity, crawler, address, site (the site block that issued
	// the ban; empty when no running handler serves it), by (the admin
	// client's address).
	// Bans that run out are not announced: their end is in the banned
	// event's until.
	EventBanLifted = "robots_ban_lifted"
	// EventVersionPublished is emitted when a site's robots.txt is loaded
	// as a new version (the first one included). Data: host (empty for
	// source file and inline), site (the handler's site block), version,
	// previous (empty for the first), source.
	EventVersionPublished = "robots_version_published"
	// EventLoadFailed is emitted when loading a site's robots.txt fails
	// (the last good version, if any, stays in force): once when an
	// outage starts, then at most hourly (sites.FailedRepeat) while it
	// lasts, not on every retry. Data: host, site, source, error (the latest),
	// since (RFC 3339, the outage's first failure), failures (loads
	// failed so far).
	EventLoadFailed = "robots_load_failed"
	// EventLoadRecovered is emitted when a site's robots.txt loads again
	// after failed loads, ending the outage robots_load_failed announced.
	// Data: host, site, source, since and until (RFC 3339), down_seconds,
	// failures (loads that failed).
	EventLoadRecovered = "robots_load_recovered"
)

// maxEmitting bounds the events being handled at once: event handlers run
// synchronously (an exec waits for its command), so events are handed to
// them off the request's path, and a flood of bans cannot start unbounded
// goroutines. Events beyond it are dropped and counted in the log.
const maxEmitting = 16

var emitting atomic.Int32

// emit hands the event to the config's events app, off the caller's path,
// when anything subscribes to it; data is built only then.
func (h *Handler) emit(name string, data func() map[string]any) {
	app, ctx := h.events, h.eventsCtx
	if app == nil || !app.ShouldEmit(name) {
		return
	}
	if emitting.Add(1) > maxEmitting {
		emitting.Add(-1)
		h.warnf("robots: dropped the event "+name+": more than "+strconv.Itoa(maxEmitting)+" events are being handled at once", zap.String("event", name))
		return
	}
	d := data()
	go func() {
		defer emitting.Add(-1)
		if ctx.Err() != nil {
			return // the config is gone
		}
		app.Emit(ctx, name, d)
	}()
}

// emitAny emits the event through the newest running handler that can: the
// admin API belongs to no handler, and the running config has one events
// app.
func emitAny(name string, data func() map[string]any) {
	hs := handlers()
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].events != nil {
			hs[i].emit(name, data)
			return
		}
	}
}

// emitBanned announces the ban that o's strike started.
func (h *Handler) emitBanned(o *outcome, id state.Identity, res state.BanResult, now time.Time) {
	h.emit(EventCrawlerBanned, func() map[string]any {
		mode := o.Mode.String()
		d := map[string]any{
			"crawler":  o.agent.Name,
			"token":    o.Assessment.TokenName(o.Who.Tokens),
			"identity": id.String(),
			"address":  "",
			"site":     h.scopeDesc(),
			"host":     o.Host,
			"until":    res.Until.UTC().Format(time.RFC3339),
			"seconds":  int64(res.Until.Sub(now).Round(time.Second) / time.Second),
			"strikes":  res.Strikes,
			"line":     0,
			"version":  "",
			"mode":     mode,
		}
		if id.Prefix.IsValid() {
			d["address"] = id.Prefix.String()
		}
		if r := o.Assessment.Decision.Rule; r != nil {
			d["line"] = r.Line
		}
		if v := o.Assessment.Version; v != nil {
			d["version"] = v.ID
		}
		return d
	})
}

// scopeDesc names the handler's site block for people (the site of its
// events): as its first request found it, else as the config's routes
// placed it when the config started (seriesAtStart), else "this handler"
// (a robots.txt loaded while the config is still being provisioned).
func (h *Handler) scopeDesc() string {
	if h.scope != nil {
		if s := h.scope.Load(); s != nil {
			return s.desc
		}
	}
	if h.series != nil {
		if site := h.series.siteName(); site != "" {
			return site
		}
	}
	return noScope.desc
}

// siteOfBan names the site block whose handler issued bans kept under the
// scope key (state.Identity.Site), "" when no running handler serves it.
func siteOfBan(key string) string {
	for _, h := range handlers() {
		if h.scope == nil {
			continue
		}
		if s := h.scope.Load(); s != nil && (s.key == key || s.logKey == key) {
			return s.desc
		}
	}
	return ""
}

// emitLifted announces a ban lifted through the admin API by the client at
// by.
func emitLifted(id state.Identity, key, by string) {
	emitAny(EventBanLifted, func() map[string]any {
		d := map[string]any{"identity": key, "crawler": id.Name, "address": "", "site": siteOfBan(id.Site), "by": by}
		if id.Prefix.IsValid() {
			d["address"] = id.Prefix.String()
		}
		return d
	})
}

// emitPublished announces a new robots.txt version of host.
func (h *Handler) emitPublished(host, id, previous string) {
	h.emit(EventVersionPublished, func() map[string]any {
		return map[string]any{"host": host, "site": h.scopeDesc(), "version": id, "previous": previous, "source": h.sourceName()}
	})
}

// emitLoadFailed announces a failed load of host's robots.txt, in the
// outage o (the loader calls it once per outage, then at most hourly).
func (h *Handler) emitLoadFailed(host string, err error, o sites.Outage) {
	h.emit(EventLoadFailed, func() map[string]any {
		return map[string]any{"host": host, "site": h.scopeDesc(), "source": h.sourceName(), "error": err.Error(),
			"since": o.Since.UTC().Format(time.RFC3339), "failures": o.Failures}
	})
}

// emitLoadRecovered announces that host's robots.txt loads again after
// the outage o.
func (h *Handler) emitLoadRecovered(host string, o sites.Outage) {
	h.emit(EventLoadRecovered, func() map[string]any {
		return map[string]any{"host": host, "site": h.scopeDesc(), "source": h.sourceName(),
			"since": o.Since.UTC().Format(time.RFC3339), "until": o.Until.UTC().Format(time.RFC3339),
			"down_seconds": int64(o.Until.Sub(o.Since).Round(time.Second) / time.Second), "failures": o.Failures}
	})
}

// sourceName says where the handler's rules come from: "site", or "file
// <path>", or "inline".
func (h *Handler) sourceName() string {
	if h.Source == "file" {
		return "file " + h.File
	}
	return h.Source
}
