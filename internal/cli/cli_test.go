package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/cli")

// siteRobots is a robots.txt with no finding (the root's check and audit
// tests judge with it).
const siteRobots = "../../testdata/cli/site.robots.txt"

// runCLI runs "caddy robots lint args..." in-process, as caddycmd would,
// and returns the exit code the command chose, its output and the error
// cobra returned. The check and audit subcommands need the root package's
// hooks: their tests live there.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string, err error) {
	t.Helper()
	root := &cobra.Command{Use: "caddy", SilenceUsage: true}
	robots := &cobra.Command{Use: "robots"}
	code = -1
	robots.AddCommand(newLintCommand(func(c int) { code = c }))
	root.AddCommand(robots)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"robots"}, args...))
	err = root.Execute()
	if code == -1 && err != nil {
		code = 1 // cobra refused the arguments: caddycmd.Main exits 1
	}
	return code, out.String(), errOut.String(), err
}

// golden compares got with testdata/cli/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "cli", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
