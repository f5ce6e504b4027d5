package sites

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// TestLogSuspiciousRobots: a robots.txt cut by the 500 KiB cap, or with no
// line that could be read, is warned about, once per site.
func TestLogSuspiciousRobots(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := newTestLoader(t, Config{Logger: zap.New(core)})
	sts := map[string]*site{}
	warn := func(host, body string) []observer.LoggedEntry {
		st := sts[host]
		if st == nil {
			st = &site{key: key{server: "test-suspicious", host: host}}
			sts[host] = st
		}
		b := []byte(body)
		if len(b) > enforce.MaxSize+1 {
			b = b[:enforce.MaxSize+1] // as publish does
		}
		l.warnSuspicious(st, b, enforce.Parse(b))
		return logs.TakeAll()
	}

	big := "User-agent: *\nDisallow: /a\n" + strings.Repeat("Disallow: /filler\n", enforce.MaxSize/18+10)
	got := warn("big.example", big)
	if len(got) != 1 || !strings.Contains(got[0].Message, "larger than 500 KiB") {
		t.Fatalf("big file: %v", got)
	}
	if f := got[0].ContextMap(); f["host"] != "big.example" || f["source"] != "site" {
		t.Errorf("fields %v", f)
	}
	if got := warn("big.example", big+"# changed\n"); len(got) != 0 {
		t.Errorf("warned again within %s: %v", suspiciousEvery, got)
	}

	got = warn("html.example", "<!doctype html>\n<html><head><title>Not found</title></head></html>\n")
	if len(got) != 1 || !strings.Contains(got[0].Message, "no user-agent group or sitemap") {
		t.Fatalf("HTML page: %v", got)
	}
	if f := got[0].ContextMap(); f["looks_like_html"] != true || f["first_line"] != "<!doctype html>" {
		t.Errorf("fields %v", f)
	}
	if got := warn("garbage.example", "\xff\xfe garbage\nmore garbage\n"); len(got) != 1 {
		t.Errorf("garbage: %v", got)
	}

	for _, ok := range []string{"", "# nothing to say\n\n", "User-agent: *\nDisallow:\n", "Sitemap: https://example.com/s.xml\n"} {
		if got := warn("ok.example", ok); len(got) != 0 {
			t.Errorf("%q: unexpected warning %v", ok, got)
		}
	}
}
