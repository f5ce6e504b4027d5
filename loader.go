package caddyrobots

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/rewrite"
	"github.com/caddyserver/certmagic"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// DefaultMaxRuleMemory bounds the estimated memory of the distinct parsed
// robots.txt versions a handler's sites keep (max_rule_memory).
const DefaultMaxRuleMemory = 64 << 20

// ruleSource is a handler's rules: the sites.Loader that loads them into a
// table kept across config reloads, wired to Caddy (the server learnt from
// the first request, Caddy's storage, the handler's logger, the metrics),
// and the crawlers seen fetching /robots.txt. The handler reads its sites
// through the loader (Snapshot, Lookup, Peek, Prompt).
type ruleSource struct {
	*sites.Loader
	h        *Handler
	tableKey string
	// srv is the server this handler serves, learnt from the first
	// request (or from the admin API's routing).
	srv atomic.Pointer[caddyhttp.Server]
	// fetched is when each crawler last fetched /robots.txt (the table's,
	// kept across reloads with it).
	fetched *lru.Cache[state.Identity, time.Time]
	// hasPrefs says whether any version of the table states AI usage
	// preferences.
	hasPrefs prefsFlag
	// released is set once release gave the table back.
	released atomic.Bool
}

// prefsFlag reads the table's HasPreferences as an atomic flag reads.
type prefsFlag struct{ t *sites.Table }

// Load reports whether any version of the table states AI usage
// preferences.
func (p prefsFlag) Load() bool { return p.t.HasPreferences() }

// tableEntry is what versionPool keeps per source across config reloads:
// the site table and who fetched /robots.txt.
type tableEntry struct {
	table   *sites.Table
	fetched *lru.Cache[state.Identity, time.Time]
}

// Destruct implements caddy.Destructor.
func (e *tableEntry) Destruct() error { return e.table.Destruct() }

// versionPool keeps site tables across config reloads, by source.
var versionPool = caddy.NewUsagePool()

// maxFetchers is how many crawlers' last /robots.txt fetch a table
// remembers.
const maxFetchers = 65536

func newRuleSource(h *Handler, ctx caddy.Context) (*ruleSource, error) {
	key, kind := "site", sites.FromSite
	switch h.Source {
	case "file":
		key, kind = "file:"+h.File+trapKeySuffix(h), sites.FromFile
	case "inline":
		sum := sha256.Sum256([]byte(h.Inline))
		key, kind = "inline:"+hex.EncodeToString(sum[:8])+trapKeySuffix(h), sites.FromInline
	}
	// A case-insensitive handler parses the same bodies differently: a
	// table of its own, under the same name (the versions, history and
	// storage are the site's, whichever way they are parsed).
	poolKey := key
	if h.CaseInsensitivePaths {
		poolKey += "|casefold"
	}
	val, _, err := versionPool.LoadOrNew(poolKey, func() (caddy.Destructor, error) {
		t := sites.NewTable(key)
		if h.CaseInsensitivePaths {
			t.FoldCase()
			enforce.WarmFoldCase() // not on a request's time
		}
		fetched, err := lru.New[state.Identity, time.Time](maxFetchers)
		if err != nil {
			return nil, fmt.Errorf("who fetched robots.txt: %w", err)
		}
		return &tableEntry{table: t, fetched: fetched}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("robots: version table: %w", err)
	}
	e := val.(*tableEntry)
	s := &ruleSource{h: h, tableKey: poolKey, fetched: e.fetched, hasPrefs: prefsFlag{e.table}}
	trap := "" // the trap the status page checks each site's robots.txt for
	if h.undeclared != nil && h.undeclared.trap != nil {
		trap = h.Trap
	}
	s.Loader, err = sites.NewLoader(ctx, e.table, sites.Config{
		Kind:          kind,
		File:          h.File,
		Inline:        h.Inline,
		Refresh:       time.Duration(h.Refresh),
		FetchTimeout:  time.Duration(h.FetchTimeout),
		KeepFor:       MaxGrace,
		MaxRuleMemory: h.maxRuleMemory,
		Storage:       storageOf(ctx),
		Logger:        h.logger,
		Warn:          h.warnf,
		Now:           func() time.Time { return h.now() },
		HTTPS:         requestIsHTTPS,
		ServerOf:      s.serverOf,
		Metrics:       loaderMetrics{},
		Rules:         h.trapRules, // undeclared.go: the trap's Disallow line in every group
		Published: func(host, id, previous string, robots *enforce.Robots) {
			h.checkTrapVersion(host, id, robots) // undeclared.go: does robots.txt disallow the trap?
			h.emitPublished(host, id, previous)
		},
		Failed:      h.emitLoadFailed,
		Recovered:   h.emitLoadRecovered,
		Unavailable: h.Unavailable, // the rule named while a site has no copy yet
		Trap:        trap,
	})
	if err != nil {
		_, _ = versionPool.Delete(poolKey)
		return nil, fmt.Errorf("robots: %w", err)
	}
	return s, nil
}

// serverKey names a server in site keys: its listen addresses.
func serverKey(srv *caddyhttp.Server) string { return strings.Join(srv.Listen, ",") }

// serverFor is srv as the loader knows it: its key, and the port it listens
// on (the first listen address's; 0 for a Unix socket or a port range),
// which the loader's Host header names unless it is 80 or 443.
func serverFor(srv *caddyhttp.Server) sites.Server {
	s := sites.Server{Handler: srv, Key: serverKey(srv)}
	if len(srv.Listen) > 0 {
		if na, err := caddy.ParseNetworkAddress(srv.Listen[0]); err == nil && !na.IsUnixNetwork() && na.PortRangeSize() == 1 {
			s.Port = int(na.StartPort)
		}
	}
	return s
}

// serverOf tells the loader which server r arrived through (the loader asks
// until it knows), and remembers it for the admin API.
func (s *ruleSource) serverOf(r *http.Request) (sites.Server, bool) {
	srv, ok := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if !ok {
		return sites.Server{}, false
	}
	s.noteServer(srv)
	return serverFor(srv), true
}

// learnServer records srv as the server this handler serves, unless one is
// known already: the admin API found the handler in srv's routes before
// any request did.
func (s *ruleSource) learnServer(srv *caddyhttp.Server) {
	s.SetServer(serverFor(srv))
	s.noteServer(srv)
}

func (s *ruleSource) noteServer(srv *caddyhttp.Server) {
	s.srv.CompareAndSwap(nil, srv)
}

// release gives back the table taken in newRuleSource.
func (s *ruleSource) release() error {
	if s == nil || s.tableKey == "" || !s.released.CompareAndSwap(false, true) {
		return nil
	}
	if _, err := versionPool.Delete(s.tableKey); err != nil {
		return fmt.Errorf("robots: releasing version table: %w", err)
	}
	return nil
}

// requestIsHTTPS reports whether the client reached the site over HTTPS:
// TLS to Caddy, or X-Forwarded-Proto https from a trusted proxy.
func requestIsHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool); trusted {
		return strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
	}
	return false
}

// storageOf returns Caddy's configured storage, or nil where there is none
// (ctx.Storage panics on a context without a config, as in unit tests).
func storageOf(ctx caddy.Context) (st certmagic.Storage) {
	defer func() {
		if recover() != nil {
			st = nil
		}
	}()
	return ctx.Storage()
}

// readRobotsFile reads a robots.txt file as the loader does (at most one
// byte past the size cap).
func readRobotsFile(path string) ([]byte, error) { return sites.ReadFile(path) }

// robots.txt governs the URL the client sent, so the handler judges it
// whatever the operator's routing makes of it: inside handle_path /docs/*,
// a crawler's /docs/search/ is judged as /docs/search/, never as the
// stripped /search/. Rules written for the stripped paths (a docs app's
// own "Disallow: /search") therefore never match there. At load, the
// handler looks at where it sits and warns when a prefix is stripped ahead
// of it and its rules do not look like the site's: a file or inline text
// none of whose rules starts with the prefix. (With source site the rules
// are the site's own /robots.txt, loaded from the top of the server, which
// crawlers read for the whole site: nothing to warn about.)

// strippedPrefixes returns the path prefixes that rewrites strip ahead of
// the handler being provisioned in ctx, outermost first: handle_path and
// `uri strip_prefix` compile to a rewrite with strip_path_prefix in the
// same subroute.
func strippedPrefixes(ctx caddy.Context) []string {
	var out []string
	for _, m := range ctx.Modules() {
		sr, ok := m.(*caddyhttp.Subroute)
		if !ok {
			continue
		}
		for _, rt := range sr.Routes {
			// Routes before ours are provisioned (Handlers); ours is being
			// loaded (HandlersRaw, up to the robots handler).
			for _, mh := range rt.Handlers {
				if rw, ok := mh.(*rewrite.Rewrite); ok && rw.StripPathPrefix != "" {
					out = append(out, rw.StripPathPrefix)
				}
			}
			if p, ours := stripBeforeRobots(rt.HandlersRaw); ours {
				out = append(out, p...)
				break
			}
		}
	}
	return out
}

// stripBeforeRobots reads a route's raw handlers: the strip_path_prefix
// values of the rewrites before a robots handler, and whether the route
// holds one.
func stripBeforeRobots(raw []json.RawMessage) ([]string, bool) {
	var out []string
	for _, h := range raw {
		var v struct {
			Handler         string `json:"handler"`
			StripPathPrefix string `json:"strip_path_prefix"`
		}
		if json.Unmarshal(h, &v) != nil {
			continue
		}
		switch {
		case v.Handler == "robots":
			return out, true
		case v.Handler == "rewrite" && v.StripPathPrefix != "":
			out = append(out, v.StripPathPrefix)
		}
	}
	return nil, false
}

// warnStrippedPrefix warns when a prefix is stripped ahead of the handler
// and its rules (source file or inline) look written for the stripped
// paths. It returns the warning, "" when there is none.
func (h *Handler) warnStrippedPrefix(prefixes []string) string {
	if len(prefixes) == 0 || h.Source == "site" {
		return ""
	}
	prefix := "/" + strings.Trim(strings.Join(prefixes, ""), "/")
	var body []byte
	switch h.Source {
	case "inline":
		body = []byte(h.Inline)
	case "file":
		b, err := readRobotsFile(h.File)
		if err != nil {
			return ""
		}
		body = b
	}
	for _, g := range enforce.Parse(body).Groups() {
		for _, r := range g.Rules {
			if strings.HasPrefix(r.Pattern, prefix) {
				return ""
			}
		}
	}
	msg := "robots: this handler sits where " + prefix + " is stripped from the path (handle_path or uri strip_prefix), but none of its rules starts with " + prefix +
		": robots.txt governs the URL the client sent, so requests are judged as " + prefix + "/..., and rules written for the stripped paths never match. Write the rules with the full path, or use source site (the site's own /robots.txt)"
	h.warnConfig(msg, zap.String("source", h.Source), zap.String("prefix", prefix))
	return msg
}

// storePool holds throttle and strike stores across config reloads, keyed by
// their configuration, so a reload keeps every crawler's budget and strikes.
var storePool = caddy.NewUsagePool()

// pooledStore lets the usage pool close a store when its last user goes.
type pooledStore struct{ state.Store }

// Destruct closes the store.
func (p pooledStore) Destruct() error { return p.Close() }

// provisionStore takes (or creates) the shared store this handler's
// configuration names.
func (h *Handler) provisionStore() error {
	cfg := StoreConfig{}
	if h.Store != nil {
		cfg = *h.Store
	}
	if cfg.Type == "" {
		cfg.Type = "memory"
	}
	repl := caddy.NewReplacer()
	url := repl.ReplaceAll(cfg.URL, "")
	tlsFiles := storeTLSFiles(cfg.TLS, repl)
	key := cfg.Type + "|" + strconv.Itoa(cfg.MaxEntries)
	if cfg.Type == "redis" {
		key += "|" + url + "|" + cfg.Prefix + "|" + time.Duration(cfg.Timeout).String()
		if tlsFiles != nil {
			key += "|tls " + tlsFiles.CA + "|" + tlsFiles.Cert + "|" + tlsFiles.Key
		}
	}
	val, _, err := storePool.LoadOrNew(key, func() (caddy.Destructor, error) {
		local := state.NewMemory(state.MemoryConfig{MaxEntries: cfg.MaxEntries})
		if cfg.Type != "redis" {
			return pooledStore{local}, nil
		}
		opts, err := state.RedisClientOptions(url, tlsFiles)
		if err != nil {
			_ = local.Close()
			return nil, fmt.Errorf("robots: store redis: %w", err)
		}
		useRedisLogger()
		remote, err := state.NewRedis(state.RedisConfig{
			Client:      redis.NewUniversalClient(opts),
			Prefix:      cfg.Prefix,
			Timeout:     time.Duration(cfg.Timeout),
			CloseClient: true,
		})
		if err != nil {
			_ = local.Close()
			return nil, fmt.Errorf("robots: store redis: %w", err)
		}
		go checkRedisAtStart(remote, h.logger)
		return pooledStore{state.NewFailover(remote, local, storeErrorReporter(h.logger))}, nil
	})
	if err != nil {
		return err
	}
	h.storeKey = key
	h.store = val.(pooledStore).Store
	return nil
}

// storeErrorReporter counts shared-state errors and logs at most one warning
// per interval, so a Redis outage does not flood the logs.
func storeErrorReporter(logger *zap.Logger) func(error) {
	limit := new(logLimiter)
	return func(err error) {
		metrics.stateErrors.WithLabelValues("redis").Inc()
		if ok, suppressed := limit.allow(time.Now()); ok {
			fields := []zap.Field{zap.Error(err), zap.Int("suppressed_since_last_warning", suppressed)}
			if fix := state.RedisErrorHint(err); fix != "" {
				fields = append(fields, zap.String("fix", fix))
			}
			logger.Warn("robots: shared state unavailable; deciding from local state (fail open)", fields...)
		}
	}
}

// storeTLSFiles returns the TLS files of c with placeholders replaced, or nil
// without a tls block.
func storeTLSFiles(c *StoreTLSConfig, repl *caddy.Replacer) *state.RedisTLS {
	if c == nil {
		return nil
	}
	return &state.RedisTLS{CA: repl.ReplaceAll(c.CA, ""), Cert: repl.ReplaceAll(c.Cert, ""), Key: repl.ReplaceAll(c.Key, "")}
}

// checkRedisAtStart pings a new Redis store, in the background so that
// Provision never waits on the network, with a bound of its own
// (state.RedisStartTimeout) rather than the per-call timeout, so that a
// failure is logged with its real cause and what to do about it. The store
// starts either way: until Redis answers, decisions come from local state
// (fail open), as during any outage.
func checkRedisAtStart(r *state.Redis, logger *zap.Logger) {
	err := r.Start(context.Background())
	switch {
	case err == nil:
		logger.Info("robots: store redis: connected")
	case errors.Is(err, redis.ErrClosed):
		// The config was unloaded before the check ended.
	default:
		logger.Error("robots: store redis: no answer at start; deciding from local state until Redis answers (fail open)",
			zap.Error(err), zap.String("fix", state.RedisErrorHint(err)))
	}
}

// useRedisLogger sends go-redis's own log lines (failed dials, discarded
// connections) to Caddy's log instead of stderr, at most one warning every
// 30 seconds. go-redis has one logger per process (redis.SetLogger), so it
// is set once, for every store and config; each line goes to the logger
// Caddy's current config gives the handler's name.
func useRedisLogger() {
	redisLoggerOnce.Do(func() { redis.SetLogger(new(redisLogger)) })
}

var redisLoggerOnce sync.Once

// redisLogger adapts zap to go-redis's logging interface.
type redisLogger struct{ limit logLimiter }

// Printf implements go-redis's internal.Logging.
func (l *redisLogger) Printf(_ context.Context, format string, v ...any) {
	if ok, suppressed := l.limit.allow(time.Now()); ok {
		caddy.Log().Named("http.handlers.robots").Warn("robots: go-redis: "+fmt.Sprintf(format, v...),
			zap.Int("suppressed_since_last_warning", suppressed))
	}
}
