package caddyrobots

import (
	"context"
	"fmt"
	"strconv"
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
	key := cfg.Type + "|" + strconv.Itoa(cfg.MaxEntries)
	if cfg.Type == "redis" {
		key += "|" + url + "|" + cfg.Prefix + "|" + time.Duration(cfg.Timeout).String()
	}
	val, _, err := storePool.LoadOrNew(key, func() (caddy.Destructor, error) {
		local := state.NewMemory(state.MemoryConfig{MaxEntries: cfg.MaxEntries})
		if cfg.Type != "redis" {
			return pooledStore{local}, nil
		}
		opts, err := state.ParseRedisURL(url)
		if err != nil {
			_ = local.Close()
			return nil, fmt.Errorf("robots: store redis: %w", err)
		}
		// Per-call deadlines come from the store's timeout; the client does
		// not connect until the first request (Provision stays offline).
		opts.ContextTimeoutEnabled = true
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
			logger.Warn("robots: shared state unavailable; deciding from local state (fail open)",
				zap.Error(err), zap.Int("suppressed_since_last_warning", suppressed))
		}
	}
}
