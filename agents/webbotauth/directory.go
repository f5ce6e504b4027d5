package webbotauth

import (
	"container/list"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keyStatus is the answer of a directory look-up.
type keyStatus uint8

const (
	keyFound       keyStatus = iota // the directory holds the key
	keyPending                      // the directory is not fetched yet
	keyUnreachable                  // the last fetch failed; nothing usable cached
	keyMissing                      // the fetched directory does not hold the key
	keyInactive                     // the directory marks the key not valid now (nbf/exp)
	keyUnsupported                  // the key exists but is not an Ed25519 key
)

// missRefetch is how old a cached directory must be before a request naming
// a key it lacks prompts a background refresh (a key may have been added).
const missRefetch = time.Minute

// maxNegativeTTL caps how long a failed fetch is remembered
// (draft-ietf-webbotauth-httpsig-protocol, "Negative Caching and Retry").
const maxNegativeTTL = 5 * time.Minute

// errRefusedAddress marks a directory fetch refused by the address guard.
var errRefusedAddress = errors.New("refused non-public address")

// Directory fetches and caches agents' key directories (JWK Sets).
//
// Fetches run in the background: a look-up never waits longer than the
// budget it is given, and a look-up of a directory that is not cached yet
// starts its fetch and reports it pending. Fetches are guarded against
// server-side request forgery: https only (plain http only for origins the
// configuration allows), no redirects, no proxy, a body size cap, a time limit,
// and no connection to a private, loopback, link-local, unspecified or other
// non-public address unless the agent's origin is explicitly allowed.
// Directories are cached per their HTTP caching headers within bounds, failed
// fetches are remembered for at most five minutes, and both the number of
// directories and the keys kept per directory are capped.
//
// A Directory is safe for concurrent use. Close stops its background work.
type Directory struct {
	cfg    Config
	client *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	entries  map[string]*list.Element // fetch URL → *dirEntry
	lru      list.List                // front: most recently used
	inflight int
	closed   bool
}

// dirEntry is the cached state of one key directory. Times are on the
// caller's clock: the now passed to look-ups.
type dirEntry struct {
	url          string
	allowPrivate bool

	keys        map[string]dirKey // by RFC 7638 thumbprint; nil until a fetch succeeded
	unsupported map[string]struct{}
	fetchedAt   time.Time
	freshUntil  time.Time
	staleUntil  time.Time // keys are not used past this time

	lastErr  string
	retryAt  time.Time     // no fetch before this time (negative cache)
	fetching chan struct{} // non-nil while a fetch runs; closed when it ends
}

type dirKey struct {
	pub      ed25519.PublicKey
	nbf, exp int64 // optional validity from the JWK ("nbf", "exp"), 0 when absent
}

// newDirectory returns a Directory configured by cfg (its zero values take the
// defaults documented on Config).
func newDirectory(cfg Config) *Directory {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Directory{
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		entries: make(map[string]*list.Element),
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would hide the address from the guard
		DialContext:            guardedDial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    cfg.FetchTimeout,
		ResponseHeaderTimeout:  cfg.FetchTimeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	if cfg.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	}
	d.client = &http.Client{
		Transport: tr,
		Timeout:   cfg.FetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // redirects are discovery failures
		},
	}
	return d
}

// Close stops background fetches and waits for them to end. Look-ups after
// Close report directories that are not cached as pending, and start nothing.
func (d *Directory) Close() {
	d.markClosed()
	d.cancel()
	d.wg.Wait()
	d.client.CloseIdleConnections()
}

// markClosed makes look-ups start no fetch any more.
func (d *Directory) markClosed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
}

// Len reports how many directories are cached (including failed fetches
// still remembered).
func (d *Directory) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}

// entryFetching returns the entry of the directory at dirURL, after
// starting a fetch of it if one is due: the fetch's done channel (nil when
// none runs), and whether the entry's keys are usable at now.
func (d *Directory) entryFetching(dirURL string, allowPrivate bool, now time.Time) (e *dirEntry, fetching chan struct{}, usable bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e = d.entryLocked(dirURL, allowPrivate)
	d.maybeFetchLocked(e, now)
	return e, e.fetching, e.keys != nil && now.Before(e.staleUntil)
}

// lookup finds the key with thumbprint keyID in the directory at dirURL.
// When the directory is not usable yet it starts a fetch (unless one runs or
// the negative cache forbids it) and waits for it at most wait, or until ctx
// ends.
func (d *Directory) lookup(ctx context.Context, dirURL, keyID string, now time.Time, allowPrivate bool, wait time.Duration) (ed25519.PublicKey, keyStatus, string) {
	e, ch, usable := d.entryFetching(dirURL, allowPrivate, now)

	if !usable && ch != nil && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if e.keys == nil || !now.Before(e.staleUntil) {
		if e.fetching == nil && e.lastErr != "" {
			return nil, keyUnreachable, e.lastErr
		}
		if e.fetching == nil && d.closed {
			return nil, keyPending, "directory not fetched (verifier closed)"
		}
		if e.fetching == nil {
			return nil, keyPending, "directory fetch not started (fetch capacity exhausted)"
		}
		return nil, keyPending, "directory fetch in progress"
	}
	k, ok := e.keys[keyID]
	if !ok {
		if now.Sub(e.fetchedAt) >= missRefetch && !now.Before(e.retryAt) {
			d.startFetchLocked(e, now)
		}
		if _, ok := e.unsupported[keyID]; ok {
			return nil, keyUnsupported, "key " + keyID + " is not an Ed25519 key"
		}
		return nil, keyMissing, "keyid " + keyID + " is not in the directory " + e.url
	}
	skew := int64(d.cfg.Skew / time.Second)
	if k.nbf != 0 && now.Unix()+skew < k.nbf {
		return nil, keyInactive, "key " + keyID + " is not valid yet (directory nbf)"
	}
	if k.exp != 0 && now.Unix()-skew > k.exp {
		return nil, keyInactive, "key " + keyID + " has expired (directory exp)"
	}
	return k.pub, keyFound, ""
}

// entryLocked returns the cache entry for dirURL, creating it (and evicting
// another when the cache is full) if needed, and marks it recently used.
func (d *Directory) entryLocked(dirURL string, allowPrivate bool) *dirEntry {
	if el, ok := d.entries[dirURL]; ok {
		d.lru.MoveToFront(el)
		return el.Value.(*dirEntry)
	}
	for len(d.entries) >= d.cfg.MaxDirectories && d.lru.Len() > 0 {
		d.evictLocked()
	}
	e := &dirEntry{url: dirURL, allowPrivate: allowPrivate}
	d.entries[dirURL] = d.lru.PushFront(e)
	return e
}

// evictLocked removes one entry: preferably a failed or empty one among the
// least recently used, so a flood of bogus agents does not push out the
// directories of real ones; otherwise the least recently used.
func (d *Directory) evictLocked() {
	victim := d.lru.Back()
	el := victim
	for i := 0; i < 16 && el != nil; i++ {
		if e := el.Value.(*dirEntry); e.keys == nil && e.fetching == nil {
			victim = el
			break
		}
		el = el.Prev()
	}
	e := victim.Value.(*dirEntry)
	d.lru.Remove(victim)
	delete(d.entries, e.url)
}

// maybeFetchLocked starts a fetch of e when it has no usable fresh copy, no
// fetch runs, and the negative cache allows one.
func (d *Directory) maybeFetchLocked(e *dirEntry, now time.Time) {
	if e.fetching != nil || now.Before(e.retryAt) {
		return
	}
	if e.keys != nil && now.Before(e.freshUntil) {
		return
	}
	d.startFetchLocked(e, now)
}

func (d *Directory) startFetchLocked(e *dirEntry, now time.Time) {
	if e.fetching != nil || d.closed || d.inflight >= d.cfg.MaxConcurrentFetches {
		return
	}
	d.inflight++
	e.fetching = make(chan struct{})
	d.wg.Add(1)
	go d.fetch(e, now)
}

// fetch retrieves e's directory and records the outcome. started is the
// caller's clock when the fetch began; cache lifetimes count from it.
func (d *Directory) fetch(e *dirEntry, started time.Time) {
	defer d.wg.Done()
	keys, unsupported, ttl, retryAfter, err := d.get(e.url, e.allowPrivate)

	d.mu.Lock()
	defer d.mu.Unlock()
	d.inflight--
	if err != nil {
		// A failure is not evidence: keep whatever was cached.
		e.lastErr = err.Error()
		// Retry-After is honoured, within the five-minute cap.
		e.retryAt = started.Add(min(max(d.cfg.NegativeTTL, retryAfter), maxNegativeTTL))
	} else {
		e.keys, e.unsupported = keys, unsupported
		e.lastErr = ""
		e.fetchedAt = started
		e.freshUntil = started.Add(ttl)
		e.staleUntil = e.freshUntil.Add(d.cfg.MaxStale)
		e.retryAt = time.Time{}
	}
	close(e.fetching)
	e.fetching = nil
}

// get performs one guarded fetch and parses the JWK Set.
func (d *Directory) get(dirURL string, allowPrivate bool) (keys map[string]dirKey, unsupported map[string]struct{}, ttl, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.FetchTimeout)
	defer cancel()
	defer func() {
		// A fetch that fails once its time is up failed because of it
		// (a body cut at the deadline reads as a short, unparsable one):
		// say so.
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
	}()
	ctx = context.WithValue(ctx, allowPrivateKey{}, allowPrivate)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, dirURL, nil)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("fetching %s: %w", dirURL, err)
	}
	req.Header.Set("Accept", DirectoryMediaType+", application/jwk-set+json;q=0.9, application/json;q=0.8")
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("fetching %s: %w", dirURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		ra := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return nil, nil, 0, ra, fmt.Errorf("fetching %s: status %d: redirects are not followed", dirURL, resp.StatusCode)
		}
		return nil, nil, 0, ra, fmt.Errorf("fetching %s: status %d", dirURL, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxDirectoryBytes+1))
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("reading %s: %w", dirURL, err)
	}
	if int64(len(body)) > d.cfg.MaxDirectoryBytes {
		return nil, nil, 0, 0, fmt.Errorf("reading %s: directory larger than %d bytes", dirURL, d.cfg.MaxDirectoryBytes)
	}
	keys, unsupported, err = parseJWKS(body, d.cfg.MaxKeysPerDirectory)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("parsing %s: %w", dirURL, err)
	}
	return keys, unsupported, cacheTTL(resp.Header, d.cfg), 0, nil
}

// parseJWKS reads a JWK Set, keeping at most maxKeys keys. Ed25519 public keys
// are indexed by their RFC 7638 / RFC 8037 SHA-256 thumbprint (base64url);
// the thumbprints of other well-formed keys are remembered as unsupported.
// Malformed entries are skipped.
func parseJWKS(body []byte, maxKeys int) (map[string]dirKey, map[string]struct{}, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, fmt.Errorf("not a JWK Set: %w", err)
	}
	if doc.Keys == nil {
		return nil, nil, errors.New(`not a JWK Set: no "keys" member`)
	}
	keys := make(map[string]dirKey, min(len(doc.Keys), maxKeys))
	unsupported := map[string]struct{}{}
	for i, raw := range doc.Keys {
		if i >= maxKeys {
			break
		}
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(raw); err != nil {
			continue
		}
		if jwk.Use != "" && jwk.Use != "sig" {
			continue
		}
		pub := jwk.Public()
		tp, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			continue
		}
		id := base64.RawURLEncoding.EncodeToString(tp)
		edPub, ok := pub.Key.(ed25519.PublicKey)
		if !ok {
			unsupported[id] = struct{}{}
			continue
		}
		var validity struct {
			Nbf json.Number `json:"nbf"`
			Exp json.Number `json:"exp"`
		}
		_ = json.Unmarshal(raw, &validity)
		keys[id] = dirKey{pub: edPub, nbf: numericDate(validity.Nbf), exp: numericDate(validity.Exp)}
	}
	return keys, unsupported, nil
}

// numericDate reads a JWT-style NumericDate, 0 when absent or malformed.
func numericDate(n json.Number) int64 {
	if n == "" {
		return 0
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	if f, err := n.Float64(); err == nil {
		return int64(f)
	}
	return 0
}

// cacheTTL computes how long a fetched directory stays fresh from its
// Cache-Control (max-age; no-store and no-cache mean the minimum) or Expires
// header, bounded by cfg.MinTTL and cfg.MaxTTL; cfg.DefaultTTL when neither
// says anything.
func cacheTTL(h http.Header, cfg Config) time.Duration {
	ttl, known := time.Duration(0), false
	for _, cc := range h.Values("Cache-Control") {
		for _, dir := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return cfg.MinTTL
			case "max-age":
				secs, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
				if err == nil && secs >= 0 {
					ttl, known = time.Duration(min(secs, 1<<32))*time.Second, true
				}
			}
		}
	}
	if !known {
		if exp := h.Get("Expires"); exp != "" {
			known = true
			ttl = 0 // an invalid Expires means "already expired"
			if t, err := http.ParseTime(exp); err == nil {
				base := time.Now()
				if date, err := http.ParseTime(h.Get("Date")); err == nil {
					base = date
				}
				ttl = t.Sub(base)
			}
		}
	}
	if !known {
		return cfg.DefaultTTL
	}
	return min(max(ttl, cfg.MinTTL), cfg.MaxTTL)
}

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date).
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && secs > 0 {
		return time.Duration(min(secs, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// allowPrivateKey is the context key telling guardedDial that this fetch's
// origin is explicitly allowed to resolve to a non-public address.
type allowPrivateKey struct{}

// guardedDial connects like net.Dialer but refuses, after name resolution,
// any address that is not publicly routable, unless the fetch's context
// allows it.
func guardedDial(ctx context.Context, network, addr string) (net.Conn, error) {
	allow, _ := ctx.Value(allowPrivateKey{}).(bool)
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return fmt.Errorf("address guard: %w", err)
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("address guard: %w", err)
			}
			if !allow && !isPublicAddr(ip) {
				return fmt.Errorf("%w %s", errRefusedAddress, ip)
			}
			return nil
		},
	}
	conn, err := dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	return conn, nil
}

// nonPublic lists address ranges that are never a legitimate agent's
// directory host, beyond what netip's predicates cover.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
}

// isPublicAddr reports whether ip may host an agent's directory: not
// loopback, private, link-local, unspecified, multicast or reserved. IPv4
// addresses embedded in IPv4-mapped and NAT64 (64:ff9b::/96) IPv6 addresses
// are judged as IPv4.
func isPublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
