package caddyrobots

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

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
	h.banHint, _ = h.store.(banHinter)
	return nil
}

// peekPace asks the store what a request would get from its throttle
// budget now, spending nothing; a store that cannot tell answers allowed.
func peekPace(ctx context.Context, s state.Store, id state.Identity, p state.Pace, now time.Time) (state.ThrottleResult, error) {
	if pp, ok := s.(state.PacePeeker); ok {
		r, err := pp.PeekPace(ctx, id, p, now)
		if err != nil {
			return r, fmt.Errorf("robots: reading the throttle state: %w", err)
		}
		return r, nil
	}
	return state.ThrottleResult{Allowed: true}, nil
}

// banHinter is a store that can say, without a lookup, that nobody has
// strikes or a ban (state.Memory).
type banHinter interface{ MayHaveBans() bool }

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
