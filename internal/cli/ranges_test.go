package cli

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

// publishers stands in for every operator that publishes a list: the
// i-th published list is served at /<i> and holds 198.18.<i>.0/24 (and an
// IPv6 /48 for Google's first list), unless failing says it answers 503.
type publishers struct {
	*httptest.Server
	mu      sync.Mutex
	failing map[int]bool
	asked   map[int]int
}

func newPublishers(t *testing.T) *publishers {
	p := &publishers{failing: map[int]bool{}, asked: map[int]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		p.asked[i]++
		fail := p.failing[i]
		p.mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"creationTime": "2020-01-01T00:00:00.000000", "prefixes": [{"ipv4Prefix": "198.18.%d.0/24"}, {"ipv6Prefix": "2001:db8:%x::/48"}]}`, i, i)
	}))
	t.Cleanup(p.Close)
	return p
}

// sources maps each published list (agents.PublishedLists) to its stand-in.
func (p *publishers) sources() (map[string][]string, map[string][]int) {
	src, idx := map[string][]string{}, map[string][]int{}
	for i, pl := range agents.PublishedLists() {
		src[pl.Method] = append(src[pl.Method], p.URL+"/"+strconv.Itoa(i))
		idx[pl.Method] = append(idx[pl.Method], i)
	}
	return src, idx
}

// runRangesFetch runs "caddy robots ranges fetch args..." in-process
// against sources.
func runRangesFetch(t *testing.T, sources map[string][]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := &cobra.Command{Use: "caddy", SilenceUsage: true}
	robots := &cobra.Command{Use: "robots"}
	code = -1
	robots.AddCommand(newRangesCommandFrom(func(c int) { code = c }, sources))
	root.AddCommand(robots)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"robots", "ranges", "fetch"}, args...))
	if err := root.Execute(); err != nil && code == -1 {
		code = 1
	}
	return code, out.String(), errOut.String()
}

// TestRangesFetch: every published list is downloaded and each method's
// lists are written, merged, to <dir>/<method>.json, dated by the
// download (not the publisher's old creationTime); ranges_dir reads them
// all back. A publisher that fails leaves that method's previous file and
// makes the exit status 1.
func TestRangesFetch(t *testing.T) {
	pub := newPublishers(t)
	src, idx := pub.sources()
	dir := filepath.Join(t.TempDir(), "mirror")
	start := time.Now().Add(-time.Second)
	code, stdout, stderr := runRangesFetch(t, src, "--out", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if len(src) < 10 {
		t.Fatalf("only %d methods publish a list", len(src))
	}
	for i := range agents.PublishedLists() {
		if pub.asked[i] != 1 {
			t.Errorf("published list %d asked %d times", i, pub.asked[i])
		}
	}
	var cfg ranges.Config
	if err := cfg.AddDir(dir); err != nil {
		t.Fatal(err)
	}
	lists, asOf, err := cfg.LoadFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(lists) != len(src) {
		t.Errorf("%d lists read back, want %d", len(lists), len(src))
	}
	for m, is := range idx {
		got := lists[m]
		if len(got) != 2*len(is) {
			t.Errorf("%s: %d prefixes, want %d", m, len(got), 2*len(is))
		}
		for _, i := range is {
			want := netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", i))
			found := false
			for _, p := range got {
				found = found || p == want
			}
			if !found {
				t.Errorf("%s: %s missing from %v", m, want, got)
			}
		}
		if asOf[m].Before(start) || asOf[m].After(time.Now()) {
			t.Errorf("%s: dated %s, want the download time", m, asOf[m])
		}
		if !strings.Contains(stdout, filepath.Join(dir, ranges.FileName(m))) {
			t.Errorf("stdout does not name %s: %s", m, stdout)
		}
	}

	// One publisher down: its method keeps the previous file.
	method := agents.PublishedLists()[0].Method
	keep := filepath.Join(dir, ranges.FileName(method))
	before, _ := os.ReadFile(keep)
	pub.mu.Lock()
	pub.failing[idx[method][0]] = true
	pub.mu.Unlock()
	code, _, stderr = runRangesFetch(t, src, "--out", dir)
	if code != ExitFailure || !strings.Contains(stderr, method+": not written") || !strings.Contains(stderr, "503") {
		t.Errorf("a publisher down: exit %d, stderr %s", code, stderr)
	}
	if after, _ := os.ReadFile(keep); !bytes.Equal(before, after) {
		t.Error("the failed method's previous file was replaced")
	}

	if code, stdout, _ := runRangesFetch(t, src); code != ExitFailure || stdout != "" {
		t.Errorf("no --out: exit %d, %s", code, stdout)
	}
}
