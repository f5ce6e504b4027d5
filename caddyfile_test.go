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
