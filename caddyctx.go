package caddyrobots

import (
	"context"
	"net/http"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Caddy's server stores what its handlers share in the request's context:
// the vars, the replacer and a copy of the request as it arrived, each a
// context.WithValue layer. A bot's request reads all three. Three calls to
// Context.Value cost ~60 ns on Caddy's chain (each layer compares its key
// as an interface); caddyValuesOf reads the three in one walk of ~15 ns.

// caddyValues are the values Caddy's server stored in a request's context
// for its handlers; nil where it stored none (outside a Caddy server).
type caddyValues struct {
	vars map[string]any
	repl *caddy.Replacer
	// orig is Caddy's copy of the request as it arrived, read in place
	// (originalRequest).
	orig *http.Request
}

// valueCtx is the layout of the context package's valueCtx, the type of
// every context.WithValue layer.
type valueCtx struct {
	context.Context
	key, val any
}

// valueCtxTab is the type word of a context.Context holding a
// context.WithValue layer, or nil when that layer is not laid out as
// valueCtx (a Go release that changed it): caddyValuesOf then asks
// Context.Value, as any caller would. TestCaddyValuesWalk fails when it is
// nil, so that an upgrade that disables the walk is noticed.
var valueCtxTab = probeValueCtx()

// probeValueCtx returns the type word of a WithValue layer after checking,
// word for word and without reading through any of them, that the layer
// holds its parent, key and value where valueCtx says.
func probeValueCtx() unsafe.Pointer {
	parent := context.Background()
	key, val := any(caddy.CtxKey("caddy-robots probe")), any(new(int))
	c := context.WithValue(parent, key, val)
	cw := (*[2]unsafe.Pointer)(unsafe.Pointer(&c))
	got := (*[6]unsafe.Pointer)(cw[1])
	want := [6]unsafe.Pointer{}
	copy(want[0:2], (*[2]unsafe.Pointer)(unsafe.Pointer(&parent))[:])
	copy(want[2:4], (*[2]unsafe.Pointer)(unsafe.Pointer(&key))[:])
	copy(want[4:6], (*[2]unsafe.Pointer)(unsafe.Pointer(&val))[:])
	if unsafe.Sizeof(valueCtx{}) != unsafe.Sizeof(want) || *got != want {
		return nil
	}
	return cw[0]
}

// caddyValuesOf returns the values Caddy's server stored in r's context.
// It walks the WithValue layers from the innermost, so the nearest layer
// of a key wins, as with Context.Value, and stops at the first layer of
// another kind (a cancel or deadline context a handler added): what it has
// not found by then is asked of Context.Value.
func caddyValuesOf(r *http.Request) (cv caddyValues) {
	var found uint8
	ctx := r.Context()
	if valueCtxTab != nil {
		c := ctx
		for found != foundAll {
			w := (*[2]unsafe.Pointer)(unsafe.Pointer(&c))
			if w[0] != valueCtxTab {
				break
			}
			l := (*valueCtx)(w[1])
			if k, ok := l.key.(caddy.CtxKey); ok {
				found |= cv.take(found, k, l.val)
			}
			c = l.Context
		}
	}
	for i, k := range caddyKeys {
		if found&(1<<i) == 0 {
			found |= cv.take(found, k, ctx.Value(k))
		}
	}
	return cv
}

// caddyKeys are the keys caddyValuesOf looks for; key i is found when bit
// i of found is set.
var caddyKeys = [...]caddy.CtxKey{caddyhttp.VarsCtxKey, caddy.ReplacerCtxKey, caddyhttp.OriginalRequestCtxKey}

// The bits of caddyKeys.
const (
	foundVars uint8 = 1 << iota
	foundRepl
	foundOrig
	foundAll = foundVars | foundRepl | foundOrig
)

// take keeps v as the value of k when k is one of the keys caddyValuesOf
// looks for and not among those found, and returns k's bit (0 otherwise).
func (cv *caddyValues) take(found uint8, k caddy.CtxKey, v any) uint8 {
	switch {
	case k == caddyhttp.VarsCtxKey && found&foundVars == 0:
		cv.vars, _ = v.(map[string]any)
		return foundVars
	case k == caddy.ReplacerCtxKey && found&foundRepl == 0:
		cv.repl, _ = v.(*caddy.Replacer)
		return foundRepl
	case k == caddyhttp.OriginalRequestCtxKey && found&foundOrig == 0:
		cv.orig = requestInPlace(v)
		return foundOrig
	}
	return 0
}
