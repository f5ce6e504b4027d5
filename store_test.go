package caddyrobots

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestStoreRedisTLSCaddyfileErrors: each mistake in store redis's tls block
// is named when the Caddyfile is adapted.
func TestStoreRedisTLSCaddyfileErrors(t *testing.T) {
	for src, want := range map[string]string{
		"robots {\n store redis redis://h {\n tls {\n ca a.pem\n ca b.pem\n }\n }\n}": "tls: ca given twice",
		"robots {\n store redis redis://h {\n tls {\n ca\n }\n }\n}":                  "tls: ca needs a file",
		"robots {\n store redis redis://h {\n tls {\n ca a b\n }\n }\n}":              "tls: ca takes one file",
		"robots {\n store redis redis://h {\n tls {\n crt a\n }\n }\n}":               `tls: unrecognized option "crt"`,
		"robots {\n store redis redis://h {\n tls {\n key k.pem\n }\n }\n}":           "cert and key go together",
		"robots {\n store redis redis://h {\n tls ca.pem\n }\n}":                      "tls takes no argument",
		"robots {\n store redis redis://h {\n tls\n tls\n }\n}":                       `option "tls" given twice`,
	} {
		err := new(Handler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", src, err, want)
		}
	}
}

// TestStoreRedisTLSProvisionErrors: an unreadable or invalid TLS file fails
// the config load, naming the file, before any connection is tried.
func TestStoreRedisTLSProvisionErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for file, want := range map[string]string{
		missing: "robots: store redis: state: redis tls ca: open " + missing + ": no such file",
		notPEM:  "robots: store redis: state: redis tls ca " + notPEM + ": no PEM certificate",
	} {
		_, err := provisionJSON(t, `{"source":"inline","inline":"User-agent: *\nDisallow: /x\n",
			"store":{"type":"redis","url":"redis://127.0.0.1:1","tls":{"ca":"`+file+`"}}}`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tls ca %s: got %v, want an error containing %q", file, err, want)
		}
	}
}

// TestStoreTLSWithoutRedis: a tls block on a memory store (JSON only: the
// Caddyfile's store memory takes no block) is an error, not ignored.
func TestStoreTLSWithoutRedis(t *testing.T) {
	_, err := provisionJSON(t, `{"source":"inline","inline":"User-agent: *\nDisallow: /x\n",
		"store":{"type":"memory","tls":{"ca":"/etc/ca.pem"}}}`)
	if err == nil || !strings.Contains(err.Error(), "store: tls is for store redis") {
		t.Errorf("got %v, want the tls-without-redis error", err)
	}
}

// TestStoreRedisStartErrorLogged: Redis does not answer at start. The config
// loads (decisions fail open to local state) and the log names the real
// cause and its fix, not a call timeout.
func TestStoreRedisStartErrorLogged(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	core, logs := observer.New(zapcore.InfoLevel)
	h := &Handler{Store: &StoreConfig{Type: "redis", URL: "redis://" + addr, Prefix: "start-check"}}
	h.logger = zap.New(core)
	if err := h.provisionStore(); err != nil {
		t.Fatalf("provisionStore with Redis down: %v (want a degraded start)", err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range logs.FilterMessageSnippet("no answer at start").All() {
			fields := e.ContextMap()
			if e.Level != zapcore.ErrorLevel {
				t.Errorf("logged at %v, want ERROR", e.Level)
			}
			if msg, _ := fields["error"].(string); !strings.Contains(msg, "connection refused") {
				t.Errorf("error field %q does not name the refused connection", msg)
			}
			if fix, _ := fields["fix"].(string); !strings.Contains(fix, "nothing listens") {
				t.Errorf("fix field %q", fix)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no start-up error logged within 10s; logs: %v", logs.All())
}

// TestStoreErrorWarningNamesFix: the rate-limited warning of a failing
// store carries the fix when the cause is known.
func TestStoreErrorWarningNamesFix(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	report := storeErrorReporter(zap.New(core))
	report(fmt.Errorf("state: redis ban check x: cannot connect: %w (%w while retrying)",
		x509.UnknownAuthorityError{}, context.DeadlineExceeded))
	all := logs.All()
	if len(all) != 1 {
		t.Fatalf("%d warnings, want 1", len(all))
	}
	if fix, _ := all[0].ContextMap()["fix"].(string); !strings.Contains(fix, "tls { ca <file> }") {
		t.Errorf("fix = %q, want the CA fix", fix)
	}
}
