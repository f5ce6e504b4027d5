package caddyrobots

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
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
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is required under CI=true: run scripts/need-chromium.sh")
		}
		t.Skip("chromium not installed (scripts/need-chromium.sh installs it)")
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	code, _, _, err := runCLI(t, "audit", "--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt",
		"--format", "html", "--out", report, accessLog)
	if code != exitOK || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	shot := filepath.Join(dir, "report.png")
	if p := os.Getenv("ROBOTS_SCREENSHOT"); p != "" {
		shot = p // keep it, to look at
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=412,915", "file://"+report)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 412 || b.Dy() != 915 {
		t.Errorf("screenshot is %v, want 412x915", b)
	}
	colours, red := countColours(img)
	if colours < 8 {
		t.Errorf("screenshot looks blank: %d distinct colours", colours)
	}
	if red == 0 {
		t.Errorf("no red pixels: the violation figures and bars should show")
	}
}

// countColours returns the number of distinct colours of img (capped) and
// the number of strongly red pixels.
func countColours(img image.Image) (int, int) {
	seen := map[uint32]bool{}
	red := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if len(seen) < 1000 {
				seen[r<<16|g<<8|bl] = true
			}
			if r > 180 && g < 90 && bl < 90 {
				red++
			}
		}
	}
	return len(seen), red
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
	if err := a.Feed(lf, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	bar := &progressBar{w: &b, start: time.Now().Add(-time.Second)}
	bar.finish(lf, a)
	if got := b.String(); !strings.HasPrefix(got, "\rtestdata/cli/access.log [") || !strings.Contains(got, "100% 17 lines") {
		t.Errorf("progress line %q", got)
	}
}
