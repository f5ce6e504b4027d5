// Package chromiumtest loads pages in a real headless Chromium for the
// tests of the pages people look at (the status page, the audit report),
// and reads the screenshots it takes. Only tests import it.
package chromiumtest

import (
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Find returns the path of Chromium. Without one the test is skipped,
// except under CI=true, where it fails (scripts/need-chromium.sh installs
// it).
func Find(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required under CI=true: run scripts/need-chromium.sh")
	}
	t.Skip("chromium not installed (scripts/need-chromium.sh installs it)")
	return ""
}

// Screenshot loads url in chromium with a window of width × height pixels
// and returns the screenshot, failing the test unless it is a PNG of that
// size. With keep set, the PNG is written there (to look at); otherwise
// to a temporary directory.
func Screenshot(t testing.TB, chromium, url string, width, height int, keep string) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	if keep != "" {
		shot = keep
		_ = os.Remove(shot)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot,
		"--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), url)
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
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("screenshot is %v, want %dx%d", b, width, height)
	}
	return img
}

// Colours returns the number of distinct colours of img (counted up to
// 1000) and the number of its pixels whose 8-bit red, green and blue
// match accepts.
func Colours(img image.Image, match func(r, g, b uint32) bool) (distinct, matched int) {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if len(seen) < 1000 {
				seen[r<<16|g<<8|bl] = true
			}
			if match(r, g, bl) {
				matched++
			}
		}
	}
	return len(seen), matched
}
