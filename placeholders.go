package caddyrobots

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// placeholder resolves the {http.robots.*} placeholders of one request. It
// has a value receiver so that the method value o.placeholder carries its
// own copy in one allocation (provider's path for outcomes it keeps none
// of).
func (o published) placeholder(key string) (any, bool) {
	name, ok := strings.CutPrefix(key, "http.robots.")
	if !ok {
		return nil, false
	}
	switch name {
	case "agent":
		return o.agent.Name, true
	case "category":
		return string(o.agent.Category), true
	case "purpose":
		return o.agent.PurposeValue, true
	case "verdict":
		return o.verdict.String(), true
	case "token":
		return o.tokenValue(), true
	case "decision":
		return actionValues[o.action], true
	case "reason":
		return o.reason.String(), true
	case "rule":
		if o.decision.Rule != nil {
			return o.decision.Rule.String(), true
		}
		return "", true
	case "group":
		if o.decision.Group != nil {
			return o.decision.Group.String(), true
		}
		return "", true
	case "version":
		if o.version != nil {
			return o.version.ID, true
		}
		return "", true
	case "retry_after":
		if o.retryAfter > 0 {
			return policy.RetryAfterSeconds(o.retryAfter), true
		}
		return "", true
	}
	return nil, false
}

// A judged request registers a placeholder provider with its replacer: a
// function over what was published for it. Building one costs an
// allocation (the function's closure and its copy of published), about a
// seventh of an allowed bot's cost in the handler. But a crawler's requests
// publish the same few outcomes again and again (same agent, group, rule
// and version), so each robots.txt version carries the providers of the
// outcomes recently judged against it (policy.Version.Memo): a request
// whose outcome is there registers that provider and allocates nothing.
// Outcomes with a Retry-After (which varies by the second), and outcomes
// judged against no version, get their own.
//
// The table is direct-mapped, lock-free and bounded (providerSlots
// entries, made on the version's first judged request) and lives as long
// as its version: it keeps nothing alive that the site's version history
// does not keep, besides the agents of its entries.
type providerTable struct {
	slots [providerSlots]atomic.Pointer[cachedProvider]
}

const providerSlots = 256

// cachedProvider is one outcome's provider; never written after it is
// stored.
type cachedProvider struct {
	published
	fn caddy.ReplacerFunc
}

func (c *cachedProvider) get(key string) (any, bool) { return c.published.placeholder(key) }

// provider returns the placeholder provider for p.
func (p *published) provider() caddy.ReplacerFunc {
	if p.version == nil || p.retryAfter != 0 {
		return p.placeholder
	}
	t, _ := p.version.Memo.Load().(*providerTable)
	if t == nil {
		t = p.version.Memo.LoadOrStore(new(providerTable)).(*providerTable)
	}
	slot := &t.slots[p.slot()]
	if e := slot.Load(); e != nil && e.published == *p {
		return e.fn
	}
	e := &cachedProvider{published: *p}
	e.fn = e.get
	slot.Store(e)
	return e.fn
}

// slot is p's index in its version's providerTable, from the identities of
// its agent and rule and its small fields.
func (p *published) slot() uint64 {
	x := uint64(uintptr(unsafe.Pointer(p.agent)))
	x ^= uint64(uintptr(unsafe.Pointer(p.decision.Rule))) * 0x9e3779b97f4a7c15
	x ^= uint64(uint32(p.token))<<32 ^ uint64(p.action)<<8 ^ uint64(p.reason)<<16 ^ uint64(p.verdict)<<24
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return x % providerSlots
}
