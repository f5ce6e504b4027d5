package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ParseRedisURL returns client options for a Redis URL, for
// [redis.NewUniversalClient]:
//
//	redis://[user:password@]host[:port][/db][?option=value...]   one server (rediss:// for TLS)
//	unix:///path/to/redis.sock[?db=N]                           one server on a Unix socket
//	redis+sentinel://[user:password@]host:port?master_name=mymaster&addr=host2:port...
//	redis+cluster://[user:password@]host:port?addr=host2:port...
//
// The +sentinel and +cluster forms also exist with rediss. Query options are
// those of go-redis's [redis.ParseURL], [redis.ParseFailoverURL] and
// [redis.ParseClusterURL] (dial_timeout, pool_size, ...); unknown options are
// errors. In the Sentinel form the user and password in the URL are the
// Sentinel's; the master's go in the username and password options.
//
// The options have ContextTimeoutEnabled set, so a call's context deadline
// (the store's per-call timeout) also bounds network reads and writes, and
// DialerRetries at 1: a refused connection fails the call at once, where
// go-redis's retries (five, 100ms apart) would outlast its timeout.
func ParseRedisURL(rawURL string) (*redis.UniversalOptions, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("state: redis URL: %w", err)
	}
	base, mode, _ := strings.Cut(u.Scheme, "+")
	// Rebuild the URL with the plain scheme go-redis expects.
	plain := *u
	plain.Scheme = base
	s := plain.String()
	var o *redis.UniversalOptions
	switch mode {
	case "":
		opt, err := redis.ParseURL(s)
		if err != nil {
			return nil, fmt.Errorf("state: redis URL %s: %w", redacted(u), err)
		}
		o = fromOptions(opt)
	case "sentinel":
		opt, err := redis.ParseFailoverURL(s)
		if err != nil {
			return nil, fmt.Errorf("state: redis URL %s: %w", redacted(u), err)
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("state: redis URL %s: a sentinel URL needs master_name", redacted(u))
		}
		o = fromFailoverOptions(opt)
	case "cluster":
		opt, err := redis.ParseClusterURL(s)
		if err != nil {
			return nil, fmt.Errorf("state: redis URL %s: %w", redacted(u), err)
		}
		o = fromClusterOptions(opt)
	default:
		return nil, fmt.Errorf("state: redis URL %s: unknown scheme %q (want redis, rediss, unix, redis+sentinel or redis+cluster)", redacted(u), u.Scheme)
	}
	o.ContextTimeoutEnabled, o.DialerRetries = true, oneDialAttempt
	return o, nil
}

// oneDialAttempt is the options' DialerRetries: a failed dial is not
// retried within a call. go-redis retries five times, 100ms apart, which no
// call of the store waits for (each has a timeout of tens of milliseconds);
// a [NewFailover] store has its own backoff. Retries would only make a
// dead node cost every call, and every Cluster topology reload that tries
// it, its whole timeout instead of a refused connection.
const oneDialAttempt = 1

// RedisOptions returns client options for servers given by address
// (host:port), for [redis.NewUniversalClient]: with masterName, addrs are
// Sentinels of that master; with cluster (or several addresses), a Redis
// Cluster; otherwise one server. ContextTimeoutEnabled is set, and
// DialerRetries is 1, as in [ParseRedisURL]. Set credentials, TLS and pool
// sizes on the result.
func RedisOptions(addrs []string, masterName string, cluster bool) (*redis.UniversalOptions, error) {
	if len(addrs) == 0 {
		return nil, errors.New("state: redis needs at least one address")
	}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("state: redis address %q: %w", a, err)
		}
	}
	if masterName != "" && cluster {
		return nil, errors.New("state: redis: choose Sentinel (master name) or Cluster, not both")
	}
	return &redis.UniversalOptions{
		Addrs:                 addrs,
		MasterName:            masterName,
		IsClusterMode:         cluster,
		ContextTimeoutEnabled: true,
		DialerRetries:         oneDialAttempt,
	}, nil
}

// NewRedisClient returns the client for opts (single node, Sentinel or
// Cluster, as [redis.NewUniversalClient] decides) and checks that it answers
// PING within the context's deadline. The client is returned even when the
// check fails, so that callers may start anyway and let a [NewFailover] store
// fail open until Redis is reachable.
func NewRedisClient(ctx context.Context, opts *redis.UniversalOptions) (redis.UniversalClient, error) {
	c := redis.NewUniversalClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		return c, fmt.Errorf("state: redis %v: ping: %w", opts.Addrs, err)
	}
	return c, nil
}

func redacted(u *url.URL) string { return u.Redacted() }

func fromOptions(o *redis.Options) *redis.UniversalOptions {
	u := &redis.UniversalOptions{
		Addrs:           []string{o.Addr},
		ClientName:      o.ClientName,
		DB:              o.DB,
		Protocol:        o.Protocol,
		Username:        o.Username,
		Password:        o.Password,
		MaxRetries:      o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff,
		DialTimeout:     o.DialTimeout,
		ReadTimeout:     o.ReadTimeout,
		WriteTimeout:    o.WriteTimeout,
		PoolFIFO:        o.PoolFIFO,
		PoolSize:        o.PoolSize,
		PoolTimeout:     o.PoolTimeout,
		MinIdleConns:    o.MinIdleConns,
		MaxIdleConns:    o.MaxIdleConns,
		MaxActiveConns:  o.MaxActiveConns,
		ConnMaxIdleTime: o.ConnMaxIdleTime,
		ConnMaxLifetime: o.ConnMaxLifetime,
		TLSConfig:       o.TLSConfig,
	}
	if o.Network == "unix" {
		path := o.Addr
		u.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
	}
	return u
}

func fromFailoverOptions(o *redis.FailoverOptions) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:            o.SentinelAddrs,
		MasterName:       o.MasterName,
		SentinelUsername: o.SentinelUsername,
		SentinelPassword: o.SentinelPassword,
		ClientName:       o.ClientName,
		DB:               o.DB,
		Protocol:         o.Protocol,
		Username:         o.Username,
		Password:         o.Password,
		MaxRetries:       o.MaxRetries,
		MinRetryBackoff:  o.MinRetryBackoff,
		MaxRetryBackoff:  o.MaxRetryBackoff,
		DialTimeout:      o.DialTimeout,
		ReadTimeout:      o.ReadTimeout,
		WriteTimeout:     o.WriteTimeout,
		PoolFIFO:         o.PoolFIFO,
		PoolSize:         o.PoolSize,
		PoolTimeout:      o.PoolTimeout,
		MinIdleConns:     o.MinIdleConns,
		MaxIdleConns:     o.MaxIdleConns,
		MaxActiveConns:   o.MaxActiveConns,
		ConnMaxIdleTime:  o.ConnMaxIdleTime,
		ConnMaxLifetime:  o.ConnMaxLifetime,
		TLSConfig:        o.TLSConfig,
		RouteByLatency:   o.RouteByLatency,
		RouteRandomly:    o.RouteRandomly,
	}
}

func fromClusterOptions(o *redis.ClusterOptions) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:           o.Addrs,
		IsClusterMode:   true,
		ClientName:      o.ClientName,
		Protocol:        o.Protocol,
		Username:        o.Username,
		Password:        o.Password,
		MaxRetries:      o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff,
		DialTimeout:     o.DialTimeout,
		ReadTimeout:     o.ReadTimeout,
		WriteTimeout:    o.WriteTimeout,
		PoolFIFO:        o.PoolFIFO,
		PoolSize:        o.PoolSize,
		PoolTimeout:     o.PoolTimeout,
		MinIdleConns:    o.MinIdleConns,
		MaxIdleConns:    o.MaxIdleConns,
		MaxActiveConns:  o.MaxActiveConns,
		ConnMaxIdleTime: o.ConnMaxIdleTime,
		ConnMaxLifetime: o.ConnMaxLifetime,
		TLSConfig:       o.TLSConfig,
		MaxRedirects:    o.MaxRedirects,
		ReadOnly:        o.ReadOnly,
		RouteByLatency:  o.RouteByLatency,
		RouteRandomly:   o.RouteRandomly,
	}
}
