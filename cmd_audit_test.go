package caddyrobots

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	accessLog           = "testdata/cli/access.log"
	auditPrefsRobots    = "testdata/cli/prefs.robots.txt"
	auditPrefsRobotsNew = "testdata/cli/prefs.new.robots.txt"
)

func TestAuditGolden(t *testing.T) {
	gz := filepath.Join(t.TempDir(), "access.log.1")
	gzipFile(t, accessLog, gz)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"audit-table", []string{"--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt", accessLog}},
		{"audit-json", []string{"--robots", siteRobots, "--format", "json", accessLog}},
		{"audit-html", []string{"--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt", "--format", "html", accessLog}},
		// AI usage preferences: GPTBot and Googlebot fetch paths whose
		// preferences refuse their purposes (ai-training, search).
		{"audit-prefs-table", []string{"--robots", auditPrefsRobots, "--robots-new", auditPrefsRobotsNew, accessLog}},
		{"audit-prefs-json", []string{"--robots", auditPrefsRobots, "--robots-new", auditPrefsRobotsNew, "--format", "json", accessLog}},
		{"audit-prefs-html", []string{"--robots", auditPrefsRobots, "--robots-new", auditPrefsRobotsNew, "--format", "html", accessLog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _, err := runCLI(t, append([]string{"audit"}, tc.args...)...)
			if code != exitOK || err != nil {
				t.Fatalf("code %d err %v", code, err)
			}
			golden(t, tc.name, out)

			// The same log gzip-compressed (and named without .gz: the
			// magic bytes decide) gives the same report.
			args := append([]string{"audit"}, tc.args...)
			args[len(args)-1] = gz
			_, outGz, _, err := runCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.ReplaceAll(outGz, gz, accessLog) != out {
				t.Errorf("gzip log gives another report:\n%s", outGz)
			}
		})
	}
}

func TestAuditUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"audit", accessLog},
		{"audit", "--robots", siteRobots, "--format", "xml", accessLog},
		{"audit", "--robots", siteRobots, "testdata/cli/no-such.log"},
		{"audit", "--robots", siteRobots, "--robots-new", "testdata/cli/no-such.txt", accessLog},
	} {
		if code, _, _, err := runCLI(t, args...); code != exitFailure || err == nil {
			t.Errorf("%v: code %d err %v, want 1", args, code, err)
		}
	}
}

func TestAuditOutFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr, err := runCLI(t, "audit", "--robots", siteRobots, "--format", "json", "--out", out, accessLog)
	if code != exitOK || err != nil || stdout != "" || !strings.Contains(stderr, "report written to") {
		t.Fatalf("code %d err %v stdout %q stderr %q", code, err, stdout, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Contains(b, []byte(`"name": "GPTBot"`)) {
		t.Errorf("report file: %v\n%s", err, b)
	}
}

// TestAuditHTMLInChromium renders the HTML report in a real headless
// Chromium at a phone's size and checks the screenshot is not blank.
// Without chromium it skips, except under CI=true, where it fails
// (scripts/need-chromium.sh installs it).
func TestAuditHTMLInChromium(t *testing.T) {
	chromium := chromiumtest.Find(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	code, _, _, err := runCLI(t, "audit", "--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt",
		"--format", "html", "--out", report, accessLog)
	if code != exitOK || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	img := chromiumtest.Screenshot(t, chromium, "file://"+report, 412, 915, os.Getenv("ROBOTS_SCREENSHOT"))
	colours, red := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r > 180 && g < 90 && b < 90 })
	if colours < 8 {
		t.Errorf("screenshot looks blank: %d distinct colours", colours)
	}
	if red == 0 {
		t.Errorf("no red pixels: the violation figures and bars should show")
	}
}

func TestAuditProgressBar(t *testing.T) {
	lf, err := audit.Open(accessLog)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	a, err := audit.New(audit.Config{Robots: enforce.Parse(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Feed(accessLog, lf, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	bar := &progressBar{w: &b, start: time.Now().Add(-time.Second)}
	bar.finish(lf, a)
	if got := b.String(); !strings.HasPrefix(got, "\rtestdata/cli/access.log [") || !strings.Contains(got, "100% 17 lines") {
		t.Errorf("progress line %q", got)
	}
}
