package cli

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/caddyrobots/caddy-robots/internal/cli/clitest"
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
	return clitest.Run(t, func(robots *cobra.Command, record func(int)) { robots.AddCommand(newLintCommand(record)) }, args...)
}

// golden compares got with testdata/cli/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	clitest.Golden(t, filepath.Join("testdata", "cli", name+".golden"), got, *update)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
