package caddyrobots

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

func newRangesVerifier(t *testing.T) *agents.Verifier {
	t.Helper()
	v, err := agents.NewVerifier(agents.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRangesConfig: parsing of ranges, ranges_refresh and ranges_operators.
func TestRangesConfig(t *testing.T) {
	t.Setenv(RangesOperatorsEnv, "")
	c, err := newRangesConfig(nil)
	if err != nil || c.Refresh != DefaultRangesRefresh || !c.Operators {
		t.Fatalf("default: %+v %v", c, err)
	}
	if src := c.Sources(); len(src["openai-gptbot"]) != 1 || len(src["google-user-triggered"]) != 3 {
		t.Errorf("default sources %v", src)
	}
	c, err = newRangesConfig(&VerifyConfig{
		RangesRefresh: "1s",
		Ranges: map[string]string{
			"openai-gptbot": "http://127.0.0.1:8080/gptbot.json",
			"anthropic":     "https://mirror.example/claude.json",
			"perplexitybot": "/etc/caddy/perplexity.json",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	src := c.Sources()
	if c.Refresh != time.Second || src["openai-gptbot"][0] != "http://127.0.0.1:8080/gptbot.json" ||
		src["anthropic"][0] != "https://mirror.example/claude.json" || src["perplexitybot"] != nil ||
		c.Files["perplexitybot"] != "/etc/caddy/perplexity.json" || len(src["bingbot"]) != 1 {
		t.Errorf("config %+v, sources %v", c, src)
	}
	c, err = newRangesConfig(&VerifyConfig{RangesOperators: "off", Ranges: map[string]string{"openai-gptbot": "https://m.example/g.json"}})
	if err != nil || len(c.Sources()) != 1 {
		t.Errorf("operators off: %v %v", c.Sources(), err)
	}
	c, _ = newRangesConfig(&VerifyConfig{RangesRefresh: "off", Ranges: map[string]string{"openai-gptbot": "https://m.example/g.json"}})
	if c.Sources() != nil {
		t.Errorf("refresh off still downloads %v", c.Sources())
	}
	t.Setenv(RangesOperatorsEnv, "off")
	if c, _ := newRangesConfig(nil); c.Sources() != nil {
		t.Errorf("%s=off still downloads %v", RangesOperatorsEnv, c.Sources())
	}

	for _, bad := range []struct {
		v    VerifyConfig
		want string
	}{
		{VerifyConfig{RangesRefresh: "500ms"}, "shorter than 1s"},
		{VerifyConfig{RangesRefresh: "soon"}, "bad duration"},
		{VerifyConfig{RangesOperators: "maybe"}, "ranges_operators"},
		{VerifyConfig{Ranges: map[string]string{"nope": "/x"}}, "unknown verification method"},
		{VerifyConfig{Ranges: map[string]string{"openai-gptbot": "http://mirror.example/g.json"}}, "only for loopback"},
		{VerifyConfig{Ranges: map[string]string{"openai-gptbot": "https:///g.json"}}, "no host"},
	} {
		if _, err := newRangesConfig(&bad.v); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want %q", bad.v, err, bad.want)
		}
	}
}

// TestRangesAgeMetric: the age gauge reports each method's list age,
// bounded to the verification methods.
func TestRangesAgeMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := registerRangesMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := registerRangesMetrics(reg); err != nil { // a reload registers again
		t.Fatal(err)
	}
	v, err := agents.NewVerifier(agents.VerifierConfig{Ranges: map[string][]netip.Prefix{"openai-gptbot": {netip.MustParsePrefix("203.0.113.0/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	off, _ := newRangesConfig(&VerifyConfig{RangesRefresh: "off"})
	release, err := ranges.Start(nil, v, off, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ages := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "caddy_robots_ranges_age_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			ages[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if a, ok := ages["openai-gptbot"]; !ok || a > 60 {
		t.Errorf("openai-gptbot age %v (present %v), want a fresh list", a, ok)
	}
	if a := ages["duckduckgo"]; a < 24*3600 {
		t.Errorf("duckduckgo (embedded) age %v s", a)
	}
	if _, ok := ages["yandex"]; ok {
		t.Error("a method without a list has an age")
	}
	if len(ages) > len(agents.VerificationMethods()) {
		t.Errorf("%d series", len(ages))
	}
}

// TestStartRangesBareContext: a context without a Caddy configuration (as
// in unit tests of the handler) has no storage; startRanges still works.
func TestStartRangesBareContext(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if contextStorage(ctx) != nil {
		t.Fatal("storage from a bare context")
	}
	off, _ := newRangesConfig(&VerifyConfig{RangesRefresh: "off"})
	release, err := startRanges(ctx, newRangesVerifier(t), off, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}
