package caddyrobots

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

func init() {
	caddy.RegisterModule(FingerprintListener{})
}

// FingerprintListener is the listener wrapper caddy.listeners.robots_fingerprint.
// Placed before Caddy's TLS layer, it reads each connection's ClientHello as
// the TLS layer reads it, computes its JA4 TLS client fingerprint
// (agents/ja4) and the engine it comes from (ja4.Classify: chromium,
// firefox, safari, library or unknown), and hands both to the HTTP handlers
// of every request on that connection: the {http.robots.tls_fingerprint}
// and {http.robots.tls_engine} placeholders, for logs and the operator's
// own matchers, and the robots handler's judgement. A
// ClientHello is chosen by the client's TLS library, not by the script
// that uses it, which headers are.
//
//	{
//		servers {
//			listener_wrappers {
//				robots_fingerprint
//				tls
//			}
//		}
//	}
//
// It must come after any wrapper that consumes bytes of its own before TLS
// (proxy_protocol) and before tls. HTTP/1.1 and HTTP/2 carry the
// fingerprint (their requests share the connection); HTTP/3 does not: Caddy
// serves QUIC from a packet listener that listener wrappers never see.
type FingerprintListener struct {
	logger *zap.Logger
	srv    *caddyhttp.Server // the server whose listener this wraps
}

// CaddyModule returns the Caddy module information.
func (FingerprintListener) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.listeners.robots_fingerprint",
		New: func() caddy.Module { return new(FingerprintListener) },
	}
}

// Provision registers, with the HTTP server whose listener this wraps, the
// connection-context hook that puts each connection's fingerprint in the
// context of its requests. Caddy provisions listener wrappers with the
// server in ctx (caddyhttp.ServerCtxKey); a wrapper loaded anywhere else
// fingerprints nothing, and says so.
func (l *FingerprintListener) Provision(ctx caddy.Context) error {
	l.logger = ctx.Logger()
	srv, _ := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if srv == nil {
		l.logger.Warn("robots_fingerprint is not wrapping an HTTP server's listener: no request will see a fingerprint")
		return nil
	}
	srv.RegisterConnContext(fingerprintConnContext)
	l.srv = srv
	fingerprintedServers.Store(srv, struct{}{})
	return nil
}

// Cleanup forgets the server when its config is unloaded.
func (l *FingerprintListener) Cleanup() error {
	if l.srv != nil {
		fingerprintedServers.Delete(l.srv)
	}
	return nil
}

// fingerprintedServers holds the HTTP servers of the loaded configs whose
// listeners robots_fingerprint wraps, so that a robots handler can tell
// whether its own server fingerprints (Caddy drops a server's listener
// wrapper config once it has loaded them, and keeps the loaded wrappers
// unexported). Keys are *caddyhttp.Server; an entry lives as long as its
// config.
var fingerprintedServers sync.Map

// WrapListener wraps ln so that each accepted connection is fingerprinted.
func (l *FingerprintListener) WrapListener(ln net.Listener) net.Listener {
	return &fingerprintListener{Listener: ln}
}

// UnmarshalCaddyfile sets up the wrapper from Caddyfile tokens; it takes no
// arguments and no options:
//
//	robots_fingerprint
func (l *FingerprintListener) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the wrapper's name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("robots_fingerprint takes no options, got %q", d.Val())
	}
	return nil
}

// fingerprintListener wraps each accepted connection in a fingerprintConn.
type fingerprintListener struct {
	net.Listener
}

// Accept returns the next connection, wrapped.
func (l *fingerprintListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	fc := &fingerprintConn{Conn: c}
	fc.provider = fc.placeholder
	return fc, nil
}

// fingerprintConn watches the bytes the TLS layer reads until the first TLS
// record is complete, then parses it and keeps its fingerprint. It reads
// nothing itself: every byte is read by the TLS layer's own Read, under
// the deadlines Caddy and net/http set for the handshake, and passes
// through unchanged, so there is nothing to replay. When the whole record
// arrives in one Read (the usual case: the TLS layer reads in blocks of at
// least 512 bytes into a growing buffer), it is parsed in place; otherwise
// the bytes seen so far are copied into a buffer of the record's declared
// size (at most ja4.MaxRecordLen) that is dropped once parsed. Only the
// parsed result is kept, for the connection's lifetime.
type fingerprintConn struct {
	net.Conn
	// done is set once the first record has been seen (or ruled out); from
	// then on Read is a plain pass-through. Read by the Read caller only.
	done bool
	// partial holds the start of a record that spans several Reads.
	partial []byte
	// fp is the parsed fingerprint, set once; nil until then and for a
	// connection whose first record is not a well-formed ClientHello.
	fp atomic.Pointer[tlsFingerprint]
	// provider resolves {http.robots.tls_fingerprint} for the requests of
	// this connection: the method value fc.placeholder, made once at
	// Accept so that a request's replacer gets it without allocating.
	provider caddy.ReplacerFunc
}

// tlsFingerprint is what a connection's ClientHello says about the client.
type tlsFingerprint struct {
	// JA4 is the JA4 fingerprint, e.g. t13d1517h2_8daaf6152771_cb7bf5808d99.
	JA4 string
	// Hello holds the structural facts (GREASE, extensions, ALPN, ...);
	// nil for a fingerprint read from a trusted proxy's header.
	Hello *ja4.Hello
	// Verdict is the engine the hello comes from (ja4.Classify), worked out
	// once per connection with the fingerprint, never per request; Unknown
	// for a fingerprint read from a header (a JA4 carries no facts).
	Verdict ja4.Verdict
	// Err is why a handshake record could not be read (wrapping
	// ja4.ErrTruncated or ja4.ErrMalformed); JA4 and Hello are then empty.
	Err error
}

// Read reads from the connection, watching the first TLS record go by.
func (c *fingerprintConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.observe(p[:n])
	}
	return n, err
}

// NetConn returns the wrapped connection.
func (c *fingerprintConn) NetConn() net.Conn { return c.Conn }

// observe takes the next bytes the TLS layer read.
func (c *fingerprintConn) observe(b []byte) {
	if c.partial == nil {
		if len(b) >= ja4.RecordHeaderLen {
			if total, ok := recordLen(b); !ok {
				c.finish(nil)
				return
			} else if len(b) >= total {
				c.finish(b[:total])
				return
			}
		}
		// The record's length is known from the header: one buffer of
		// that size (or a small one until the header is complete).
		c.partial = make([]byte, 0, ja4.RecordHeaderLen)
	}
	if len(c.partial) < ja4.RecordHeaderLen {
		k := min(ja4.RecordHeaderLen-len(c.partial), len(b))
		c.partial, b = append(c.partial, b[:k]...), b[k:]
		if len(c.partial) < ja4.RecordHeaderLen {
			return
		}
		total, ok := recordLen(c.partial)
		if !ok {
			c.finish(nil)
			return
		}
		c.partial = append(make([]byte, 0, total), c.partial...)
	}
	k := min(cap(c.partial)-len(c.partial), len(b))
	c.partial = append(c.partial, b[:k]...)
	if len(c.partial) == cap(c.partial) {
		c.finish(c.partial)
	}
}

// recordLen returns the length of the record whose header starts b, false
// when b does not start a handshake record of a plausible length (plain
// HTTP sent to the HTTPS port, for one).
func recordLen(b []byte) (int, bool) {
	n := int(binary.BigEndian.Uint16(b[3:5]))
	if b[0] != 0x16 || n > ja4.MaxRecordPayload {
		return 0, false
	}
	return ja4.RecordHeaderLen + n, true
}

// finish parses record (nil: no fingerprint) and stops watching.
func (c *fingerprintConn) finish(record []byte) {
	c.done, c.partial = true, nil
	if record == nil {
		return
	}
	h, err := ja4.ParseClientHello(record)
	if err != nil {
		// Kept so that a judgement can tell a handshake this package could
		// not read (a ClientHello split over several records, which only a
		// purpose-built client sends) from no wrapper at all.
		c.fp.Store(&tlsFingerprint{Err: err})
		return
	}
	c.fp.Store(&tlsFingerprint{JA4: h.JA4(), Hello: h, Verdict: ja4.Classify(h)})
}

// placeholder resolves {http.robots.tls_fingerprint}, the connection's
// JA4, {http.robots.tls_engine}, the engine its handshake comes from
// (chromium, firefox, safari, library or unknown: ja4.Classify), and
// {http.robots.tls_versions} (offeredVersions); all are empty when the
// first record was not a ClientHello this package could read.
func (c *fingerprintConn) placeholder(key string) (any, bool) {
	switch key {
	case tlsFingerprintPlaceholder:
		if fp := c.fp.Load(); fp != nil {
			return fp.JA4, true // empty for an unreadable hello
		}
		return "", true
	case tlsEnginePlaceholder:
		if fp := c.fp.Load(); fp != nil && fp.Hello != nil {
			return fp.Verdict.Engine.String(), true
		}
		return "", true
	case tlsVersionsPlaceholder:
		if fp := c.fp.Load(); fp != nil && fp.Hello != nil {
			return offeredVersions(fp.Hello), true
		}
		return "", true
	}
	return nil, false
}

// offeredVersions is {http.robots.tls_versions}: the versions h offers in
// supported_versions, GREASE left out, in the order sent, as JA4_r writes
// its lists ("0304,0303"); "" without the extension. With the engine, it
// is all the tls signal reads of a handshake (policy.TLSVerdict: whether
// it offers TLS 1.3 as RFC 8446 published it, which a JA4's version, the
// highest offered, does not always say), so that caddy robots audit judges
// the signal from an access log as the handler did.
func offeredVersions(h *ja4.Hello) string {
	var b strings.Builder
	for _, v := range h.SupportedVersions {
		if ja4.IsGREASE(v) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%04x", v)
	}
	return b.String()
}

// fingerprintCtxKey is the context key of a request's fingerprintConn.
type fingerprintCtxKey struct{}

// fingerprintConnContext is the server's connection-context hook: it
// stores the connection's fingerprintConn in the context its requests
// inherit. It runs when the server accepts the connection, before the
// handshake, so it stores the connection, whose fingerprint is read when a
// request asks.
func fingerprintConnContext(ctx context.Context, c net.Conn) context.Context {
	if fc := fingerprintConnOf(c); fc != nil {
		return context.WithValue(ctx, fingerprintCtxKey{}, fc)
	}
	return ctx
}

// fingerprintConnOf finds the fingerprintConn under c: the server hands
// its hook the *tls.Conn, whose NetConn is the connection the wrappers
// before tls returned. Wrappers after tls that hide the *tls.Conn without
// a NetConn method hide the fingerprint too.
func fingerprintConnOf(c net.Conn) *fingerprintConn {
	for range 8 {
		switch v := c.(type) {
		case *fingerprintConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// tlsFingerprintOf returns the TLS fingerprint of the connection r came
// over, and true when there is one: false for plain HTTP, HTTP/3, a server
// without robots_fingerprint, and a first handshake record that was not a
// readable ClientHello (then the returned value is not nil and its Err says
// why; otherwise it is nil). Absence of a fingerprint is not evidence of
// anything. The cost is a field test for plain HTTP and one context read
// for HTTPS.
func tlsFingerprintOf(r *http.Request) (*tlsFingerprint, bool) {
	if r.TLS == nil {
		return nil, false
	}
	fc, _ := r.Context().Value(fingerprintCtxKey{}).(*fingerprintConn)
	if fc == nil {
		return nil, false
	}
	fp := fc.fp.Load()
	return fp, fp != nil && fp.Hello != nil
}

// offerTLSFingerprint makes {http.robots.tls_fingerprint} available to r
// when r came over a fingerprinted connection: a field test for plain HTTP;
// for HTTPS two context reads and the connection's provider appended to the
// replacer (whose provider list Caddy has already grown, so no allocation).
func offerTLSFingerprint(r *http.Request) {
	if r.TLS == nil {
		return
	}
	ctx := r.Context()
	fc, _ := ctx.Value(fingerprintCtxKey{}).(*fingerprintConn)
	if fc == nil {
		return
	}
	if repl, _ := ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer); repl != nil {
		repl.Map(fc.provider)
	}
}

// tlsEngineOf returns the engine verdict of the client's handshake, worked
// out once per connection when the hello was read, and true when there is
// a fingerprint (fingerprintOf: a trusted proxy's own handshake is not its
// clients'; a fingerprint from a proxy's header has an Unknown verdict). A
// browser's claim is refuted only by a library's handshake
// (agents.TLSClaim.RefutedBy).
func (h *Handler) tlsEngineOf(r *http.Request) (ja4.Verdict, bool) {
	fp, ok := h.fingerprintOf(r)
	if !ok {
		return ja4.Verdict{}, false
	}
	return fp.Verdict, true
}

// Behind a proxy that terminates TLS, the handshake Caddy sees is the
// proxy's, not its clients'. With `tls_fingerprint_header <name>` in the
// robots directive the fingerprint is read from that request header (a JA4,
// as the proxy computed it: Cloudflare's cf-ja4, nginx's and HAProxy's JA4
// modules, ...), only when the immediate peer is a proxy the server trusts
// (its trusted_proxies option, as Caddy decided for the request). From
// anyone else the header is ignored: a client cannot choose its own
// fingerprint. A JA4 carries no structural facts, so a fingerprint read
// from a header gives the placeholder and the client's marks, and its
// engine is Unknown: the tls signal never judges it.
//
// Without the option, a connection from a trusted proxy still carries the
// proxy's handshake: the judgement (fingerprintOf) never takes it for its
// clients', though the placeholder shows it.

// The placeholders' keys: the client's JA4, and the engine of its
// handshake and the TLS versions it offers (the connection's only: a JA4
// from a header carries no facts).
const (
	tlsFingerprintPlaceholder = "http.robots.tls_fingerprint"
	tlsEnginePlaceholder      = "http.robots.tls_engine"
	tlsVersionsPlaceholder    = "http.robots.tls_versions"
)

// provisionFingerprint checks the tls_fingerprint_header option and writes
// the header's name in canonical form, so that a request's header map is
// read without canonicalising it per request.
func (h *Handler) provisionFingerprint() error {
	if h.TLSFingerprintHeader == "" {
		return nil
	}
	if !validHeaderName(h.TLSFingerprintHeader) {
		return fmt.Errorf("robots: tls_fingerprint_header %q is not a header name", h.TLSFingerprintHeader)
	}
	h.TLSFingerprintHeader = http.CanonicalHeaderKey(h.TLSFingerprintHeader)
	return nil
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110
// section 5.1: a token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// fromTrustedProxy reports whether r's immediate peer is a proxy its
// server trusts, as Caddy decided when the request arrived (the
// trusted_proxy variable).
func fromTrustedProxy(r *http.Request) bool {
	vars, _ := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	trusted, _ := vars[caddyhttp.TrustedProxyVarKey].(bool)
	return trusted
}

// headerFingerprint returns the JA4 in r's header name, "" when there is
// none, more than one, or a value that is not a JA4.
func headerFingerprint(r *http.Request, name string) string {
	v := r.Header[name]
	if len(v) != 1 {
		return ""
	}
	s := strings.TrimSpace(v[0])
	if !ja4.IsFingerprint(s) {
		return ""
	}
	return s
}

// offerFingerprint makes {http.robots.tls_fingerprint} and
// {http.robots.tls_engine} available to r: with tls_fingerprint_header and
// a trusted proxy as the peer, the JA4 that proxy sent (empty without one)
// and an empty engine; otherwise the connection's
// (offerTLSFingerprint). Without the option the cost is
// offerTLSFingerprint's; with it, one context read more per request.
func (h *Handler) offerFingerprint(r *http.Request) {
	if h.TLSFingerprintHeader == "" || !fromTrustedProxy(r) {
		offerTLSFingerprint(r)
		return
	}
	if repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); repl != nil {
		repl.Set(tlsFingerprintPlaceholder, headerFingerprint(r, h.TLSFingerprintHeader))
		repl.Set(tlsEnginePlaceholder, "") // a JA4 carries no facts
	}
}

// fingerprintOf returns the client's TLS fingerprint that the judgement of
// r rests on, and true when there is one:
//   - with tls_fingerprint_header and a trusted proxy as the peer, the JA4
//     it sent, with no Hello and an Unknown verdict (never judged by the
//     engine, but it keys the client's marks);
//   - otherwise the connection's (tlsFingerprintOf), except when the peer
//     is a trusted proxy and the handshake is not a browser engine's: that
//     handshake is the proxy's own, not its clients'.
//
// A person's browser connecting directly pays tlsFingerprintOf's context
// read and nothing more.
func (h *Handler) fingerprintOf(r *http.Request) (*tlsFingerprint, bool) {
	if h.TLSFingerprintHeader != "" && fromTrustedProxy(r) {
		v := headerFingerprint(r, h.TLSFingerprintHeader)
		if v == "" {
			return nil, false
		}
		return &tlsFingerprint{JA4: v}, true
	}
	fp, ok := tlsFingerprintOf(r)
	if ok && !fp.Verdict.Engine.IsBrowser() && fromTrustedProxy(r) {
		return nil, false
	}
	return fp, ok
}

// fingerprintWarning is the load-time warning for a handler whose
// undeclared-crawler checks are on while its server (srv, serving site)
// speaks HTTPS without robots_fingerprint: its requests carry no
// fingerprint, so the handshake cannot tell a script from a browser. ""
// when there is nothing to warn about: the checks are off, the server
// serves only plain HTTP, the wrapper is there, or the fingerprint comes
// from a proxy's header. It is checked once the config has started
// (placementWarnings), when every listener wrapper has been provisioned.
func (h *Handler) fingerprintWarning(srv *caddyhttp.Server, site string) string {
	if srv == nil || len(srv.TLSConnPolicies) == 0 || h.TLSFingerprintHeader != "" {
		return ""
	}
	if modes := policy.NewUndeclaredModes(h.Undeclared, h.UndeclaredSignals, h.Trap != ""); !modes.On() {
		return ""
	}
	if _, ok := fingerprintedServers.Load(srv); ok {
		return ""
	}
	return "robots: site " + site + " is served over HTTPS without the robots_fingerprint listener wrapper, so its requests carry no TLS fingerprint and a script's handshake is not told from a browser's. " +
		"Add it before tls in the global options: servers { listener_wrappers { robots_fingerprint tls } } (behind a TLS-terminating proxy, use tls_fingerprint_header instead)"
}

// Interface guards
var (
	_ caddy.Provisioner     = (*FingerprintListener)(nil)
	_ caddy.CleanerUpper    = (*FingerprintListener)(nil)
	_ caddy.ListenerWrapper = (*FingerprintListener)(nil)
	_ caddyfile.Unmarshaler = (*FingerprintListener)(nil)
)
