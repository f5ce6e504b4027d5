package caddyrobots

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// provisionJSON decodes a handler from its JSON config and provisions it
// (and validates it, as Caddy does). It returns the handler and the first
// error; the handler is cleaned up when the test ends.
func provisionJSON(t *testing.T, config string) (*Handler, error) {
	t.Helper()
	t.Setenv(RangesOperatorsEnv, "off") // no test downloads IP lists
	h := new(Handler)
	if err := json.Unmarshal([]byte(config), h); err != nil {
		t.Fatalf("decoding %s: %v", config, err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	err := h.Provision(ctx)
	if err == nil {
		err = h.Validate()
	}
	t.Cleanup(func() { _ = h.Cleanup(); cancel() })
	return h, err
}

// TestConfigProvisionErrors: each configuration that used to pass and then
// misbehave fails at provision with a message naming the option.
func TestConfigProvisionErrors(t *testing.T) {
	t.Setenv("ROBOTS_TEST_UNSET", "")
	dir := t.TempDir()
	cases := []struct {
		name, config, want string
	}{
		{"missing file", `{"source":"file","file":"` + filepath.Join(dir, "nonexistent") + `"}`,
			"robots: source file: cannot read " + filepath.Join(dir, "nonexistent") + ": open"},
		{"missing file says why", `{"source":"file","file":"` + filepath.Join(dir, "nonexistent") + `"}`,
			"(the file must exist and be readable when the config loads)"},
		{"directory as file", `{"source":"file","file":"` + dir + `"}`,
			"robots: source file: cannot read " + dir},
		{"file placeholder empty", `{"source":"file","file":"{env.ROBOTS_TEST_UNSET}"}`,
			"robots: source file: the value is empty after replacing placeholders ({env.ROBOTS_TEST_UNSET})"},
		{"redis URL empty", `{"store":{"type":"redis","url":"{env.ROBOTS_TEST_UNSET}"}}`,
			"robots: store redis: the URL is empty after replacing placeholders ({env.ROBOTS_TEST_UNSET})"},
		{"resolver not an address", `{"verify":{"resolver":"notanaddress"}}`,
			`robots: verify resolver: "notanaddress" is not an IP address with an optional port`},
		{"resolver bad port", `{"verify":{"resolver":"127.0.0.1:0"}}`,
			`robots: verify resolver: "127.0.0.1:0" has no valid port (1-65535)`},
		{"resolver host name", `{"verify":{"resolver":"dns.example:53"}}`,
			`robots: verify resolver: "dns.example:53" is not an IP address`},
		{"resolver placeholder empty", `{"verify":{"resolver":"{env.ROBOTS_TEST_UNSET}"}}`,
			"robots: verify resolver: the value is empty after replacing placeholders ({env.ROBOTS_TEST_UNSET})"},
		{"ranges placeholder empty", `{"verify":{"ranges":{"openai-gptbot":"{env.ROBOTS_TEST_UNSET}"}}}`,
			"robots: verify ranges for openai-gptbot: the value is empty after replacing placeholders ({env.ROBOTS_TEST_UNSET})"},
		{"exempt placeholder empty", `{"exempt":["{env.ROBOTS_TEST_UNSET}"]}`,
			"robots: exempt: the value is empty after replacing placeholders ({env.ROBOTS_TEST_UNSET})"},
		{"fetch_timeout negative", `{"fetch_timeout":-1}`, "fetch_timeout: -1ns is outside 100ms..1m"},
		{"fetch_timeout 1ns", `{"fetch_timeout":"1ns"}`, "fetch_timeout: 1ns is outside 100ms..1m"},
		{"fetch_timeout 2m", `{"fetch_timeout":"2m"}`, "fetch_timeout: 2m is outside 100ms..1m"},
		{"redis timeout negative", `{"store":{"type":"redis","url":"redis://127.0.0.1:1","timeout":-5}}`,
			"store redis timeout: -5ns is outside 1ms..10s"},
		{"verify timeout", `{"verify":{"timeout":"1h"}}`, "verify timeout: 1h is outside 100ms..30s"},
		{"refresh short", `{"refresh":"500ms"}`, "refresh: 500ms is outside 1s..24h"},
		{"grace long", `{"grace":"8d"}`, "grace: 8d is outside 0..7d"},
		{"max_rule_memory 64 bytes", `{"max_rule_memory":64}`, "max_rule_memory: 64 B is outside 16MiB..1TiB"},
		{"max_rule_memory negative", `{"max_rule_memory":-1}`, "max_rule_memory must not be negative"},
		{"exempt host bits", `{"exempt":["10.1.2.3/8"]}`, `robots: exempt: network "10.1.2.3/8" has host bits set`},
		{"strikes window 1ns", `{"strikes":{"count":1,"window":1,"ban":1}}`, "strikes window: 1ns is outside 1s..24h"},
		{"strikes ban 1ns", `{"strikes":{"count":1,"window":"10m","ban":1}}`, "strikes ban: 1ns is outside 1m..30d"},
		{"strikes negative", `{"strikes":{"count":1,"window":-1}}`, "strikes: count, window and ban must not be negative"},
		{"signature_skew long", `{"verify":{"signature_skew":"9999h"}}`, "verify signature_skew: 9999h is outside 0..10m"},
		{"ranges unknown method", `{"verify":{"ranges":{"gptbot":"/etc/caddy/gptbot.json"}}}`, `ranges: unknown verification method "gptbot" (did you mean openai-gptbot?)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := provisionJSON(t, c.config)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: got %v, want an error containing %q", c.config, err, c.want)
			}
		})
	}
}

// TestConfigZeroMeansDefault: in JSON, an omitted or zero duration is the
// default.
func TestConfigZeroMeansDefault(t *testing.T) {
	h, err := provisionJSON(t, `{"source":"inline","inline":"User-agent: *\nDisallow:\n","refresh":0,"fetch_timeout":0}`)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(h.Refresh) != DefaultRefresh || time.Duration(h.FetchTimeout) != DefaultFetchTimeout {
		t.Errorf("refresh %v, fetch_timeout %v; want the defaults", time.Duration(h.Refresh), time.Duration(h.FetchTimeout))
	}
}

// TestConfigPlaceholders: placeholders in paths and addresses are replaced
// at provision, as in Caddy's own modules.
func TestConfigPlaceholders(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ranges := filepath.Join(dir, "gptbot.txt")
	if err := os.WriteFile(ranges, []byte("192.0.2.0/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROBOTS_TEST_FILE", file)
	t.Setenv("ROBOTS_TEST_DNS", "127.0.0.1")
	t.Setenv("ROBOTS_TEST_RANGES", ranges)
	t.Setenv("ROBOTS_TEST_EXEMPT", "10.0.0.0/8, 192.0.2.7")
	h, err := provisionJSON(t, `{"source":"file","file":"{env.ROBOTS_TEST_FILE}",
		"verify":{"resolver":"{env.ROBOTS_TEST_DNS}","ranges":{"openai-gptbot":"{env.ROBOTS_TEST_RANGES}"}},
		"exempt":["{env.ROBOTS_TEST_EXEMPT}","203.0.113.1"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if h.File != file {
		t.Errorf("file = %q, want %q", h.File, file)
	}
	if got := h.Verify.Resolver; got != "127.0.0.1:53" {
		t.Errorf("resolver = %q, want 127.0.0.1:53 (port 53 by default)", got)
	}
	if got := h.Verify.Ranges["openai-gptbot"]; got != ranges {
		t.Errorf("ranges = %q, want %q", got, ranges)
	}
	if got := len(h.exempt); got != 3 {
		t.Errorf("%d exempt networks (%v), want 3", got, h.exempt)
	}
}

// TestConfigResolver: a resolver is an IP address with an optional port.
func TestConfigResolver(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":         "127.0.0.1:53",
		"127.0.0.1:5353":    "127.0.0.1:5353",
		"::1":               "[::1]:53",
		"[::1]":             "[::1]:53",
		"[2001:db8::1]:853": "[2001:db8::1]:853",
		"notanaddress":      "",
		"localhost:53":      "",
		"127.0.0.1:":        "",
		"127.0.0.1:65536":   "",
		"127.0.0.1:dns":     "",
	} {
		got, err := checkResolver(in)
		if want == "" {
			if err == nil || !strings.Contains(err.Error(), "verify resolver: ") || !strings.Contains(err.Error(), in) {
				t.Errorf("checkResolver(%q) = %q, %v; want an error naming the option and the value", in, got, err)
			}
			continue
		}
		if got != want || err != nil {
			t.Errorf("checkResolver(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestCaddyfileBounds: range and zero errors of the Caddyfile name the
// option and the file:line.
func TestCaddyfileBounds(t *testing.T) {
	cases := map[string]string{
		"robots {\n refresh 500ms\n}":                                  "robots: refresh: 500ms is outside 1s..24h, at Testfile:2",
		"robots {\n refresh 25h\n}":                                    "robots: refresh: 25h is outside 1s..24h, at Testfile:2",
		"robots {\n refresh 0\n}":                                      "robots: refresh 0 is not allowed: omit refresh for the default, or give 1s..24h, at Testfile:2",
		"robots {\n\n grace 8d\n}":                                     "robots: grace: 8d is outside 0..7d, at Testfile:3",
		"robots {\n fetch_timeout 0\n}":                                "robots: fetch_timeout 0 is not allowed: omit fetch_timeout for the default, or give 100ms..1m, at Testfile:2",
		"robots {\n fetch_timeout 1ns\n}":                              "robots: fetch_timeout: 1ns is outside 100ms..1m, at Testfile:2",
		"robots {\n fetch_timeout -1s\n}":                              "robots: fetch_timeout: duration must not be negative, at Testfile:2",
		"robots {\n fetch_timeout 2m\n}":                               "robots: fetch_timeout: 2m is outside 100ms..1m, at Testfile:2",
		"robots {\n verify {\n timeout 0\n }\n}":                       "robots: verify timeout 0 is not allowed: omit verify timeout for the default, or give 100ms..30s, at Testfile:3",
		"robots {\n store redis redis://h:6379 {\n timeout 0\n }\n}":   "robots: store redis timeout 0 is not allowed: omit store redis timeout for the default, or give 1ms..10s, at Testfile:3",
		"robots {\n store redis redis://h:6379 {\n timeout 11s\n }\n}": "robots: store redis timeout: 11s is outside 1ms..10s, at Testfile:3",
		"robots {\n store redis redis://h:6379 {\n timeout -5\n }\n}":  `robots: store redis timeout: bad duration "-5"`,
		"robots {\n verify {\n resolver notanaddress\n }\n}":           `robots: verify resolver: "notanaddress" is not an IP address with an optional port (e.g. 127.0.0.1:53 or [::1]:53), at Testfile:3`,
		"robots {\n verify {\n resolver 127.0.0.1:99999\n }\n}":        `robots: verify resolver: "127.0.0.1:99999" has no valid port (1-65535), at Testfile:3`,
		"robots {\n store redis foo://h\n}":                            "robots: store redis: state: redis URL foo://h: redis: invalid URL scheme: foo, at Testfile:2",
	}
	for src, want := range cases {
		h := new(Handler)
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got  %v\n want an error containing %q", src, err, want)
		}
	}
	// Accepted: a resolver without a port, placeholders (checked at
	// provision), grace 0.
	for _, src := range []string{
		"robots {\n verify {\n resolver 127.0.0.1\n }\n}",
		"robots {\n verify {\n resolver {env.DNS}\n }\n}",
		"robots {\n source file {env.ROBOTS_FILE}\n}",
		"robots {\n store redis {env.ROBOTS_REDIS_URL}\n}",
		"robots {\n exempt {env.EXEMPT} 10.0.0.0/8\n}",
		"robots {\n grace 0\n}",
		"robots {\n refresh 1s\n fetch_timeout 1m\n}",
	} {
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// TestValidatePlacement: what `caddy validate` runs (caddy.Validate: every
// module provisioned, nothing started) refuses a robots handler in
// handle_errors and two robots handlers for the same requests of a site,
// naming the site; robots handlers under different matchers, in different
// handle blocks or in different sites load.
func TestValidatePlacement(t *testing.T) {
	t.Setenv(RangesOperatorsEnv, "off")
	const g = "{\n\tauto_https off\n\tadmin off\n}\n"
	validate := func(src string) error {
		t.Helper()
		adapted, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), map[string]any{"filename": "Caddyfile"})
		if err != nil {
			t.Fatalf("adapt: %v\n%s", err, src)
		}
		var cfg caddy.Config
		if err := json.Unmarshal(adapted, &cfg); err != nil {
			t.Fatal(err)
		}
		return caddy.Validate(&cfg)
	}
	for name, c := range map[string]struct{ src, want string }{
		"two in one site": {g + "http://a.localhost:8080 {\n\trobots\n\trobots {\n\t\tsource inline \"User-agent: *\\nDisallow: /x\\n\"\n\t}\n\trespond ok\n}\n",
			"robots: site a.localhost on :8080 has two robots handlers that run for the same requests"},
		"two in one route block": {g + "http://a.localhost:8080 {\n\troute {\n\t\trobots\n\t}\n\troute {\n\t\trobots\n\t}\n\trespond ok\n}\n",
			"has two robots handlers that run for the same requests"},
		"two, the second in a later site's server": {g + "http://b.localhost:8080 {\n\trespond b\n}\nhttp://a.localhost:8080 {\n\trobots /x/*\n\trobots /x/*\n\trespond ok\n}\n",
			"robots: site a.localhost on :8080 has two robots handlers"},
		"one bare, one in a route": {g + "http://a.localhost:8080 {\n\trobots\n\troute {\n\t\trobots\n\t}\n\trespond ok\n}\n",
			"has two robots handlers that run for the same requests"},
		"in handle_errors": {g + "http://a.localhost:8080 {\n\trespond ok\n\thandle_errors {\n\t\trobots\n\t\trespond \"error\"\n\t}\n}\n",
			"has the robots directive inside handle_errors: it would judge the error pages of every request, so a bot's 404 would become a 403 or a 503"},
		"in handle_errors 404": {g + "http://a.localhost:8080 {\n\trobots\n\trespond ok\n\thandle_errors 404 {\n\t\trobots\n\t\trespond \"error\"\n\t}\n}\n",
			"inside handle_errors"},
	} {
		t.Run(name, func(t *testing.T) {
			err := validate(c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	for name, src := range map[string]string{
		"one per site":                        g + "http://a.localhost:8080 {\n\trobots\n\trespond a\n}\nhttp://b.localhost:8080 {\n\trobots\n\trespond b\n}\n",
		"different matchers":                  g + "http://a.localhost:8080 {\n\troute /a/* {\n\t\trobots\n\t}\n\trobots\n\trespond ok\n}\n",
		"handle blocks":                       g + "http://a.localhost:8080 {\n\thandle /a/* {\n\t\trobots\n\t\trespond a\n\t}\n\thandle {\n\t\trobots\n\t\trespond b\n\t}\n}\n",
		"use_error_routes with handle_errors": g + "http://a.localhost:8080 {\n\trobots {\n\t\tuse_error_routes\n\t}\n\trespond ok\n\thandle_errors {\n\t\trespond \"{err.status_code}\"\n\t}\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := validate(src); err != nil {
				t.Errorf("%v\n%s", err, src)
			}
		})
	}
}

// TestValidatePlacementJSON: the same checks hold for a JSON config, in a
// server's error routes and in a subroute's own.
func TestValidatePlacementJSON(t *testing.T) {
	t.Setenv(RangesOperatorsEnv, "off")
	for name, c := range map[string]struct{ errors, want string }{
		"server errors": {`"routes":[{"handle":[{"handler":"static_response","body":"ok"}]}],"errors":{"routes":[{"handle":[{"handler":"robots"}]}]}`,
			"robots: site * on :8080 has the robots directive inside handle_errors"},
		"subroute errors": {`"routes":[{"handle":[{"handler":"subroute","routes":[{"handle":[{"handler":"static_response","body":"ok"}]}],"errors":{"routes":[{"handle":[{"handler":"robots"}]}]}}]}]`,
			"inside handle_errors"},
		"two in one route": {`"routes":[{"match":[{"host":["a.example"]}],"handle":[{"handler":"robots"},{"handler":"robots"}]}]`,
			"robots: site a.example on :8080 has two robots handlers"},
	} {
		t.Run(name, func(t *testing.T) {
			var cfg caddy.Config
			raw := `{"admin":{"disabled":true},"apps":{"http":{"servers":{"srv0":{"listen":[":8080"],"automatic_https":{"disable":true},` + c.errors + `}}}}}`
			if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
				t.Fatal(err)
			}
			if err := caddy.Validate(&cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestRenamedOptions: the old names disguised and disguised_signals are
// still read, moved into undeclared and undeclared_signals with a warning
// naming both; a config giving an option under both names is an error
// naming both, in JSON and in the Caddyfile.
func TestRenamedOptions(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	h := &Handler{Disguised: "log", DisguisedSignals: map[string]string{"trap": "enforce"}}
	if err := h.takeRenamedOptions(zap.New(core)); err != nil {
		t.Fatal(err)
	}
	if h.Undeclared != "log" || h.UndeclaredSignals["trap"] != "enforce" || h.Disguised != "" || h.DisguisedSignals != nil {
		t.Errorf("not moved to the new names: %+v", h)
	}
	var warned []string
	for _, e := range logs.All() {
		warned = append(warned, e.Message)
	}
	if len(warned) != 2 || !strings.Contains(warned[0], "disguised is now undeclared") || !strings.Contains(warned[1], "disguised_signals is now undeclared_signals") {
		t.Errorf("warnings %q, want one per renamed option", warned)
	}

	for _, c := range []struct {
		h    Handler
		want string
	}{
		{Handler{Disguised: "log", Undeclared: "enforce"}, "disguised and undeclared are both set"},
		{Handler{DisguisedSignals: map[string]string{"tls": "log"}, UndeclaredSignals: map[string]string{}}, "disguised_signals and undeclared_signals are both set"},
	} {
		if err := c.h.takeRenamedOptions(nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.h, err, c.want)
		}
	}

	h = &Handler{}
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("robots {\n disguised log {\n trap enforce\n }\n}")); err != nil {
		t.Fatal(err)
	}
	if h.Undeclared != "log" || h.UndeclaredSignals["trap"] != "enforce" || h.Disguised != "" {
		t.Errorf("disguised in the Caddyfile: parsed as %+v", h)
	}
	for _, src := range []string{"robots {\n disguised off\n undeclared log\n}", "robots {\n undeclared log\n disguised off\n}"} {
		err := (&Handler{}).UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), "disguised and undeclared are both given") {
			t.Errorf("%q: %v, want an error naming both", src, err)
		}
	}
}
