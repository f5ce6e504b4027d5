package cli

import (
	"slices"
	"testing"
)

func TestLintGolden(t *testing.T) {
	code, out, _, err := runCLI(t, "lint", "testdata/cli/lint.robots.txt")
	if code != ExitFailure || err == nil {
		t.Errorf("lint with errors: code %d err %v, want 1 and an error (so that the shell sees 1)", code, err)
	}
	golden(t, "lint", out)
}

func TestLintCleanAndStrict(t *testing.T) {
	code, out, _, err := runCLI(t, "lint", siteRobots)
	if code != ExitOK || err != nil || out != "0 errors, 0 warnings\n" {
		t.Errorf("clean file: code %d err %v\n%s", code, err, out)
	}
	// new.robots.txt names only known tokens but a warning-only file
	// fails under --strict.
	dir := t.TempDir()
	path := dir + "/warn.txt"
	writeFile(t, path, "User-agent: *\nDisallow: /a\nAllow: /a*\n")
	if code, _, _, err := runCLI(t, "lint", path); code != ExitOK || err != nil {
		t.Errorf("warnings only: code %d err %v, want 0", code, err)
	}
	if code, _, _, err := runCLI(t, "lint", "--strict", path); code != ExitFailure || err == nil {
		t.Errorf("warnings with --strict: code %d err %v, want 1", code, err)
	}
}

func TestSuggestTokens(t *testing.T) {
	cands := catalogueTokens()
	for _, tc := range []struct {
		tok  string
		want string
	}{
		{"GPTbott", "GPTBot"},
		{"Googlebott", "Googlebot"},
		{"ClaudBot", "ClaudeBot"},
	} {
		if got := suggest(tc.tok, cands); !slices.Contains(got, tc.want) {
			t.Errorf("suggest(%q) = %v, want it to include %q", tc.tok, got, tc.want)
		}
	}
	if got := suggest("MyOwnPrivateThing", cands); len(got) != 0 {
		t.Errorf("an unrelated token should get no suggestion, got %v", got)
	}
}
