package caddyrobots

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"
)

var update = flag.Bool("update", false, "rewrite the golden Caddyfile→JSON files")

// TestCaddyfileAdapt compares the JSON that each Caddyfile in
// testdata/caddyfile_adapt adapts to with the golden JSON after the line of
// ten dashes. An expected part that does not start with "{" is an error
// substring the adaptation must fail with.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/caddyfile_adapt/*.caddyfiletest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			input, expected, ok := strings.Cut(string(raw), "\n----------\n")
			if !ok {
				t.Fatalf("%s: no ---------- separator", f)
			}
			input += "\n"
			expected = strings.TrimSpace(expected)
			if !strings.HasPrefix(expected, "{") {
				_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), nil)
				if err == nil || !strings.Contains(err.Error(), expected) {
					t.Errorf("want an error containing %q, got %v", expected, err)
				}
				return
			}
			if *update {
				out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), nil)
				if err != nil {
					t.Fatal(err)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, out, "", "\t"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(strings.TrimSuffix(input, "\n")+"\n----------\n"+pretty.String()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !caddytest.CompareAdapt(t, f, input, "caddyfile", expected) {
				t.Fail()
			}
		})
	}
}

// TestUnmarshalCaddyfileErrors checks that each mistake is reported with
// the option's name.
func TestUnmarshalCaddyfileErrors(t *testing.T) {
	cases := map[string]string{
		"robots extra":                                      "unexpected argument",
		"robots {\n bogus 1\n}":                             `unrecognized option "bogus"`,
		"robots {\n refresh\n}":                             "refresh needs a duration",
		"robots {\n refresh soon\n}":                        `refresh: bad duration "soon"`,
		"robots {\n refresh 1h\n refresh 2h\n}":             `option "refresh" given twice`,
		"robots {\n mode loud\n}":                           `mode: unknown value "loud"`,
		"robots {\n source ftp\n}":                          `source: unknown source "ftp"`,
		"robots {\n source file\n}":                         "source file needs exactly one path",
		"robots {\n exempt 10.0.0.0/33\n}":                  "exempt",
		"robots {\n strikes 3 1m\n}":                        "strikes needs off, or <count> <window> <ban>",
		"robots {\n strikes x 1m 1h\n}":                     `count "x" is not a positive number`,
		"robots {\n store disk\n}":                          `store: unknown store "disk"`,
		"robots {\n store redis\n}":                         "store redis needs a URL",
		"robots {\n store redis redis://x {\n bogus\n }\n}": `store redis: unrecognized option "bogus"`,
		"robots {\n verify {\n ranges x\n }\n}":             "ranges needs <method> <file>",
		"robots {\n crawl_delay sometimes\n}":               `crawl_delay: unknown value "sometimes"`,
		"robots {\n use_error_routes yes\n}":                "use_error_routes takes no argument",
		"robots {\n case_insensitive_paths on\n}":           "case_insensitive_paths takes no argument",
	}
	for src, want := range cases {
		h := new(Handler)
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", src, err, want)
		}
	}
}

// TestExamplesAdapt makes sure every example config adapts.
func TestExamplesAdapt(t *testing.T) {
	files, _ := filepath.Glob("examples/*/Caddyfile")
	files = append(files, "Caddyfile.example")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(raw, map[string]any{"filename": f}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestCaddyfileNoSilentConfig: each config that used to load and then
// misbehave without a word fails the adapt, naming the option, the fix
// and the file:line.
func TestCaddyfileNoSilentConfig(t *testing.T) {
	cases := map[string][]string{
		// A size without a unit, and one too small to hold a robots.txt.
		"robots {\n max_rule_memory 64\n}":                                        {`max_rule_memory: "64" has no unit: sizes need one, e.g. 64MiB`, "Testfile:2"},
		"robots {\n max_rule_memory 1MiB\n}":                                      {"max_rule_memory: 1.0 MiB is outside 16MiB..1TiB", "Testfile:2"},
		"robots {\n max_rule_memory 64B\n}":                                       {"max_rule_memory: 64 B is outside 16MiB..1TiB", "Testfile:2"},
		"robots {\n max_rule_memory 2PiB\n}":                                      {"max_rule_memory: 2.0 PiB is outside 16MiB..1TiB", "Testfile:2"},
		"robots {\n max_rule_memory lots\n}":                                      {`max_rule_memory: bad size "lots"`, "Testfile:2"},
		"robots {\n\n exempt 10.1.2.3/8\n}":                                       {`exempt: network "10.1.2.3/8" has host bits set, so it means all of 10.0.0.0/8: write 10.0.0.0/8 for that network, or 10.1.2.3/32 for the one address`, "Testfile:3"},
		"robots {\n exempt 2001:db8::1/32\n}":                                     {"write 2001:db8::/32 for that network, or 2001:db8::1/128 for the one address"},
		"robots {\n strikes 1 1ns 1ns\n}":                                         {"strikes window: 1ns is outside 1s..24h", "Testfile:2"},
		"robots {\n strikes 1 10m 1ns\n}":                                         {"strikes ban: 1ns is outside 1m..30d", "Testfile:2"},
		"robots {\n strikes 1 25h 1h\n}":                                          {"strikes window: 25h is outside 1s..24h"},
		"robots {\n strikes 1 10m 31d\n}":                                         {"strikes ban: 31d is outside 1m..30d"},
		"robots {\n verify {\n timeout 2s\n timeout 5s\n }\n}":                    {`verify: option "timeout" given twice`, "Testfile:4"},
		"robots {\n verify {\n resolver 127.0.0.1\n resolver 127.0.0.2\n }\n}":    {`verify: option "resolver" given twice`},
		"robots {\n verify {\n signature_skew 1m\n signature_skew 2m\n }\n}":      {`verify: option "signature_skew" given twice`},
		"robots {\n verify {\n ranges_refresh 1h\n ranges_refresh off\n }\n}":     {`verify: option "ranges_refresh" given twice`},
		"robots {\n verify {\n ranges_operators on\n ranges_operators off\n }\n}": {`verify: option "ranges_operators" given twice`},
		"robots {\n verify {\n signature_skew 9999h\n }\n}":                       {"verify signature_skew: 9999h is outside 0..10m", "Testfile:3"},
		"robots {\n verify {\n ranges gptbot /etc/caddy/gptbot.json\n }\n}":       {`unknown verification method "gptbot" (did you mean openai-gptbot?)`, "write ranges <method> <file or https URL>, with one of the methods", "openai-gptbot", "perplexitybot", "Testfile:3"},
		"robots {\n verify {\n ranges GPTBot /etc/caddy/gptbot.json\n }\n}":       {`(did you mean openai-gptbot?)`},
		"robots {\n verify {\n ranges gptbot\n }\n}":                              {"ranges needs <method> <file> or <method> <https-url>, e.g. ranges openai-gptbot /etc/caddy/gptbot.json", "Testfile:3"},
		"robots {\n store redis redis://h {\n timeout 1s\n timeout 2s\n }\n}":     {`store redis: option "timeout" given twice`},
		"robots {\n undeclared {\n client_hints log\n client_hints off\n }\n}":    {`undeclared: signal "client_hints" given twice`},
		"robots {\n trap /a/\n trap /b/\n}":                                       {`option "trap" given twice`},
	}
	for src, wants := range cases {
		h := new(Handler)
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q:\n got  %v\n want an error containing %q", src, err, want)
			}
		}
	}
	// Still accepted: sizes with units, the bounds themselves, a network
	// written as such, one address, repeatable verify options.
	for _, src := range []string{
		"robots {\n max_rule_memory 16MiB\n}",
		"robots {\n max_rule_memory 1GiB\n}",
		"robots {\n max_rule_memory 100MB\n}",
		"robots {\n exempt 10.0.0.0/8 10.1.2.3/32 10.1.2.3 2001:db8::/32\n}",
		"robots {\n strikes 1 1s 1m\n}",
		"robots {\n strikes 10 24h 30d\n}",
		"robots {\n verify {\n signature_skew 10m\n ranges openai-gptbot /a.json\n ranges perplexitybot /b.json\n signature_agent https://a.example\n signature_agent https://b.example\n }\n}",
	} {
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}
