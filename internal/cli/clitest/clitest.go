// Package clitest runs `caddy robots` commands in-process for tests and
// compares their output with golden files, for the tests of internal/cli
// and for the root package's tests of the commands that need its hooks.
package clitest

import (
	"bytes"
	"os"
	"testing"

	"github.com/spf13/cobra"
)

// Run runs "caddy robots args..." in-process, as caddycmd would, with the
// subcommands add puts under the robots command (each reporting its exit
// code through record). It returns the exit code the command chose, its
// output and the error cobra returned.
func Run(t testing.TB, add func(robots *cobra.Command, record func(int)), args ...string) (code int, stdout, stderr string, err error) {
	t.Helper()
	root := &cobra.Command{Use: "caddy", SilenceUsage: true}
	robots := &cobra.Command{Use: "robots"}
	code = -1
	add(robots, func(c int) { code = c })
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

// Golden compares got with the golden file at path, or rewrites it when
// update is set (the tests' -update flag).
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
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
