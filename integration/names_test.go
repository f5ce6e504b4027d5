package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenamedOptionsStillRead: configs written before disguised was
// renamed undeclared keep working. `caddy adapt` of a Caddyfile with the
// old subdirective warns that it is now undeclared and writes the new JSON
// fields only; `caddy validate` of a JSON config with the old fields warns
// the same at provision; either file giving both names fails, naming both.
// Run through the real cmd/caddy binary: its stderr is what an operator
// sees.
func TestRenamedOptionsStillRead(t *testing.T) {
	bin := caddyBinary(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	site := func(robots string) string {
		return "{\n\tadmin off\n}\nhttp://names.localhost:0 {\n\trobots {\n\t\tsource inline \"User-agent: *\\nDisallow: /private/\\n\"\n" + robots + "\t}\n\trespond ok\n}\n"
	}

	old := write("old.Caddyfile", site("\t\tdisguised log {\n\t\t\ttrap enforce\n\t\t}\n"))
	code, stdout, stderr := runCaddy(t, bin, "adapt", "--config", old)
	if code != 0 {
		t.Fatalf("caddy adapt of disguised: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "disguised is now undeclared") || !strings.Contains(strings.ToLower(stderr.String()), "warn") {
		t.Errorf("caddy adapt of disguised did not warn that it is now undeclared:\n%s", stderr)
	}
	if !strings.Contains(stdout.String(), `"undeclared":"log"`) || !strings.Contains(stdout.String(), `"undeclared_signals":{"trap":"enforce"}`) || strings.Contains(stdout.String(), "disguised") {
		t.Errorf("caddy adapt of disguised did not write the new fields only:\n%s", stdout)
	}

	both := write("both.Caddyfile", site("\t\tundeclared log\n\t\tdisguised enforce\n"))
	code, _, stderr = runCaddy(t, bin, "adapt", "--config", both)
	if code == 0 || !strings.Contains(stderr.String(), "disguised and undeclared are both given") {
		t.Errorf("caddy adapt of disguised beside undeclared: exit %d, want an error naming both:\n%s", code, stderr)
	}

	handler := func(fields string) string {
		return `{"admin":{"disabled":true},"apps":{"http":{"servers":{"s":{"listen":["127.0.0.1:0"],"routes":[{"handle":[` +
			`{"handler":"robots","source":"inline","inline":"User-agent: *\nDisallow: /private/\n",` + fields + `},` +
			`{"handler":"static_response","body":"ok"}]}]}}}}}`
	}
	oldJSON := write("old.json", handler(`"disguised":"log","disguised_signals":{"trap":"enforce"}`))
	code, _, stderr = runCaddy(t, bin, "validate", "--config", oldJSON)
	if code != 0 {
		t.Fatalf("caddy validate of disguised and disguised_signals: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"disguised is now undeclared", "disguised_signals is now undeclared_signals"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("caddy validate did not warn %q:\n%s", want, stderr)
		}
	}
	for _, tc := range []struct{ fields, want string }{
		{`"disguised":"log","undeclared":"enforce"`, "disguised and undeclared are both set"},
		{`"disguised_signals":{"trap":"log"},"undeclared_signals":{"tls":"log"}`, "disguised_signals and undeclared_signals are both set"},
	} {
		code, _, stderr = runCaddy(t, bin, "validate", "--config", write("both.json", handler(tc.fields)))
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("caddy validate of %s: exit %d, want an error containing %q:\n%s", tc.fields, code, tc.want, stderr)
		}
	}
}
