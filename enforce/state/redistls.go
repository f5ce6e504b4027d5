package state

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Connection defaults of [RedisClientOptions], apart from the store's
// per-call timeout ([RedisConfig].Timeout, 50ms by default).
const (
	// DefaultRedisDialTimeout bounds one connection attempt, TCP connect
	// and TLS handshake together. A TLS handshake can take longer than a
	// whole call may (50ms); go-redis (v9.23) dials apart from the call
	// that asked, under this bound, and keeps a connection that outlived
	// its call for the next one, so the call timeout never cuts a
	// handshake (it only stops the call waiting for it).
	DefaultRedisDialTimeout = 5 * time.Second
	// DefaultRedisMinIdleConns is how many connections the client keeps
	// open and idle per server, dialed in the background: requests find a
	// connection whose handshake is done, at start and after a connection
	// is dropped, rather than waiting for one within their call timeout.
	DefaultRedisMinIdleConns = 2
	// RedisStartTimeout bounds the PING a new store sends at start, which
	// also makes its first connections: long enough for a TLS handshake
	// and a dial retry, so that its error, if any, is the real one (an
	// unknown certificate authority, a refused connection) rather than a
	// call timeout.
	RedisStartTimeout = 5 * time.Second
)

// RedisTLS names the PEM files of a TLS connection to Redis. All are
// optional; with none, a rediss:// URL verifies the server against the
// system's roots.
type RedisTLS struct {
	// CA holds the certificates of the authorities that sign the server's
	// certificate, instead of the system's roots.
	CA string
	// Cert and Key are this client's certificate and key, for a server
	// that asks for one (tls-auth-clients yes). Both or neither.
	Cert string
	Key  string
}

// Config returns the TLS configuration for serverName (the host the
// certificate must name), reading and checking the files now so that a
// missing or malformed one is a configuration error, not a connection
// failure at the first request.
func (t RedisTLS) Config(serverName string) (*tls.Config, error) {
	c := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("state: redis tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("state: redis tls ca %s: no PEM certificate in the file", t.CA)
		}
		c.RootCAs = pool
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, errors.New("state: redis tls: cert and key go together (give both or neither)")
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("state: redis tls cert %s, key %s: %w", t.Cert, t.Key, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// RedisClientOptions returns the client options for rawURL (see
// [ParseRedisURL]) made ready for a store with a short per-call timeout:
//
//   - TLS: with t (even empty) or a rediss URL, connections use TLS,
//     verified against t.CA (else the system's roots) for the URL's host,
//     with t's client certificate if given. The URL's host names the
//     server for every connection, as go-redis does for rediss URLs: with
//     Sentinel or Cluster over TLS, each server's certificate must name it.
//   - Timeouts: a connection attempt gets DefaultRedisDialTimeout (unless
//     the URL sets dial_timeout), and DefaultRedisMinIdleConns connections
//     (unless the URL sets min_idle_conns) are kept ready, so a TLS
//     handshake is not cut short by the call timeout. Reads and writes
//     are bounded by each call's deadline (ContextTimeoutEnabled).
//
// Errors are configuration errors: a malformed URL, an unreadable or
// invalid certificate file.
func RedisClientOptions(rawURL string, t *RedisTLS) (*redis.UniversalOptions, error) {
	o, err := ParseRedisURL(rawURL)
	if err != nil {
		return nil, err
	}
	if t != nil {
		name := ""
		if o.TLSConfig != nil {
			name = o.TLSConfig.ServerName
		} else if len(o.Addrs) > 0 {
			name, _, _ = net.SplitHostPort(o.Addrs[0])
		}
		if o.TLSConfig, err = t.Config(name); err != nil {
			return nil, err
		}
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultRedisDialTimeout
	}
	if o.MinIdleConns == 0 {
		o.MinIdleConns = DefaultRedisMinIdleConns
	}
	return o, nil
}

// RedisErrorHint returns what an operator can do about err, a failure to
// reach Redis, or "" when there is nothing specific to say.
func RedisErrorHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case err == nil:
		return ""
	case errors.As(err, &unknownCA):
		return "the server's certificate is signed by an authority this host does not trust: name its CA with tls { ca <file> } in store redis"
	case errors.As(err, &hostname):
		return "the server's certificate does not name the URL's host: connect by a name the certificate carries"
	case errors.As(err, &invalid):
		return "the server's certificate is not valid (expired, or not for serving): renew it on the Redis server"
	case errors.As(err, &record):
		return "the server does not speak TLS on this port: use redis:// and no tls block, or the server's TLS port"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens at the URL's host and port: check the URL and that redis-server runs"
	case strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate"):
		return "the server asks for a client certificate: give one with tls { cert <file> key <file> } in store redis"
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH"):
		return "the server refused the credentials: check user:password in the URL"
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(msg, "connection reset"):
		return "the server closed the connection: if it expects TLS, use rediss:// or a tls block"
	}
	return ""
}
