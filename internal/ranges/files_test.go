package ranges

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddyrobots/caddy-robots/agents"
)

// writeList writes a one-prefix list for 203.0.113.0/24 to path: JSON
// with creationTime created (zero: none), or plain text.
func writeList(t *testing.T, path string, created time.Time, json bool) {
	t.Helper()
	body := "203.0.113.0/24\n"
	if json {
		ct := ""
		if !created.IsZero() {
			ct = `"creationTime": "` + created.UTC().Format("2006-01-02T15:04:05.000000") + `", `
		}
		body = `{` + ct + `"prefixes": [{"ipv4Prefix": "203.0.113.0/24"}]}`
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// verifierOf builds a verifier from the files of c, as the handler does.
func verifierOf(t *testing.T, c Config) *agents.Verifier {
	t.Helper()
	prefixes, asOf, err := c.LoadFiles()
	if err != nil {
		t.Fatal(err)
	}
	v, err := agents.NewVerifier(agents.VerifierConfig{Ranges: prefixes, RangesAsOf: asOf})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRangesFileAge: a list given as a file is as old as its creationTime,
// else its modification time; past 30 days it no longer proves a spoof
// (an address outside it claiming the crawler is unverified), as a
// download that old would not; a recent file still does.
func TestRangesFileAge(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-40 * 24 * time.Hour)
	outside := netip.MustParseAddr("198.51.100.7")
	for _, c := range []struct {
		name    string
		created time.Time // the JSON creationTime; zero: none
		json    bool
		mtime   time.Time
		stale   bool
	}{
		{"creationTime 40 days ago, written today", old, true, time.Now(), true},
		{"plain text written 40 days ago", time.Time{}, false, old, true},
		{"JSON without creationTime written 40 days ago", time.Time{}, true, old, true},
		{"creationTime yesterday", time.Now().Add(-24 * time.Hour), true, time.Now(), false},
		{"creationTime later than the file", time.Now(), true, old, true},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		writeList(t, path, c.created, c.json)
		if err := os.Chtimes(path, c.mtime, c.mtime); err != nil {
			t.Fatal(err)
		}
		cfg, err := NewConfig(0, false, map[string]string{"openai-gptbot": path})
		if err != nil {
			t.Fatal(err)
		}
		v := verifierOf(t, cfg)
		asOf, _ := v.ListAsOf("openai-gptbot")
		stale := slices.Contains(v.StaleLists(), "openai-gptbot")
		verdict := v.VerifyMethod(context.Background(), "openai-gptbot", outside)
		want := agents.Spoofed
		if c.stale {
			want = agents.Unverified
		}
		if stale != c.stale || verdict != want {
			t.Errorf("%s: list dated %s, stale %v, outside address %v; want stale %v, %v", c.name, asOf, stale, verdict, c.stale, want)
		}
		if got := v.VerifyMethod(context.Background(), "openai-gptbot", netip.MustParseAddr("203.0.113.9")); got != agents.Verified {
			t.Errorf("%s: an address in the list is %v", c.name, got)
		}
	}
}

// TestRangesFileStaleWarned: a stale file is named in its own warning,
// whose fix is refreshing the file, not turning downloads on.
func TestRangesFileStaleWarned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gptbot.json")
	writeList(t, path, time.Now().Add(-40*24*time.Hour), true)
	cfg, err := NewConfig(DefaultRefresh, true, map[string]string{"openai-gptbot": path})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	staleWarned = sync.Map{}
	WarnStale(zap.New(core), verifierOf(t, cfg), cfg)
	var found bool
	for _, e := range logs.All() {
		if methods := fmt.Sprint(e.ContextMap()["methods"]); strings.Contains(methods, "openai-gptbot") {
			found = true
			if fix, _ := e.ContextMap()["fix"].(string); !strings.Contains(fix, "ranges fetch") {
				t.Errorf("fix %q", fix)
			}
		}
	}
	if !found {
		t.Errorf("the stale file is not warned about: %v", logs.All())
	}
}

// TestRangesDir: ranges_dir reads every <method>.json it holds, a ranges
// line wins over it, its methods are not downloaded, and a missing or
// empty directory is an error that says what it should hold.
func TestRangesDir(t *testing.T) {
	dir := t.TempDir()
	writeList(t, filepath.Join(dir, FileName("openai-gptbot")), time.Now(), true)
	writeList(t, filepath.Join(dir, FileName("perplexitybot")), time.Now(), true)
	writeList(t, filepath.Join(dir, "notes.json"), time.Now(), true) // not a method: ignored
	own := filepath.Join(t.TempDir(), "own.txt")
	writeList(t, own, time.Time{}, false)
	cfg, err := NewConfig(DefaultRefresh, true, map[string]string{"perplexitybot": own})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.AddDir(dir); err != nil {
		t.Fatal(err)
	}
	if cfg.Files["openai-gptbot"] != filepath.Join(dir, "openai-gptbot.json") || cfg.Files["perplexitybot"] != own || len(cfg.Files) != 2 {
		t.Errorf("files %v", cfg.Files)
	}
	src := cfg.Sources()
	if _, ok := src["openai-gptbot"]; ok {
		t.Error("a method read from ranges_dir is downloaded too")
	}
	if _, ok := src["google-common"]; !ok {
		t.Error("a method not in ranges_dir is no longer downloaded")
	}
	if v := verifierOf(t, cfg); v == nil {
		t.Fatal("no verifier")
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{t.TempDir(), "holds no IP list: it should hold files named <method>.json"},
	} {
		var empty Config
		if err := empty.AddDir(c.dir); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ranges_dir") {
			t.Errorf("AddDir(%s): %v, want %q", c.dir, err, c.want)
		}
	}
}
