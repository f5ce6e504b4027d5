package ranges

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddyrobots/caddy-robots/agents"
)

// rangesServer is a loopback server publishing one IP list with an ETag.
type rangesServer struct {
	*httptest.Server
	mu     sync.Mutex
	body   string
	etag   string
	status int
	hits   atomic.Int64
	full   atomic.Int64 // 200 answers
}

func newRangesServer(t *testing.T, body string) *rangesServer {
	t.Helper()
	s := &rangesServer{body: body, etag: `"1"`}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, etag, status := s.body, s.etag, s.status
		s.mu.Unlock()
		if status != 0 {
			http.Error(w, "down", status)
			return
		}
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.full.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *rangesServer) serve(body, etag string) {
	s.mu.Lock()
	s.body, s.etag, s.status = body, etag, 0
	s.mu.Unlock()
}

func rangesJSON(prefixes ...string) string {
	parts := make([]string, len(prefixes))
	for i, p := range prefixes {
		parts[i] = fmt.Sprintf(`{"ipv4Prefix": %q}`, p)
	}
	return `{"creationTime": "2026-11-22T00:00:00Z", "prefixes": [` + strings.Join(parts, ", ") + `]}`
}

func newRangesVerifier(t *testing.T) *agents.Verifier {
	t.Helper()
	v, err := agents.NewVerifier(agents.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func gptbotVerdict(v *agents.Verifier, ip string) agents.Verdict {
	return v.VerifyMethod(context.Background(), "openai-gptbot", netip.MustParseAddr(ip))
}

func counterValue(t *testing.T, method, result string) float64 {
	t.Helper()
	initMetrics()
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.fetches); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["method"] == method && l["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// loopLogger sends a loop's warnings to the test log.
func loopLogger(t *testing.T) *zap.Logger {
	return zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel))
}

// TestRangesLoop: the loop downloads at start, hands the list to the
// verifier (a GPTBot claim from outside it becomes Spoofed where the stale
// embedded list left it Unverified), keeps it in storage, and the next
// rounds cost 304s. A second handler with the same configuration shares
// the loop.
func TestRangesLoop(t *testing.T) {
	srv := newRangesServer(t, rangesJSON("203.0.113.0/24"))
	storage := &certmagic.FileStorage{Path: t.TempDir()}
	cfg := Config{Refresh: 100 * time.Millisecond, URLs: map[string]string{"openai-gptbot": srv.URL + "/gptbot.json"}}
	okBefore := counterValue(t, "openai-gptbot", "ok")
	nmBefore := counterValue(t, "openai-gptbot", "not_modified")

	v1 := newRangesVerifier(t)
	if got := gptbotVerdict(v1, "198.51.100.7"); got != agents.Unverified {
		t.Fatalf("embedded list: %v, want Unverified", got)
	}
	release1, err := Start(storage, v1, cfg, loopLogger(t), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the downloaded list", func() bool { return gptbotVerdict(v1, "198.51.100.7") == agents.Spoofed })
	if got := gptbotVerdict(v1, "203.0.113.5"); got != agents.Verified {
		t.Errorf("inside the list: %v", got)
	}

	// A second handler joins the same loop and gets the list at once.
	v2 := newRangesVerifier(t)
	release2, err := Start(storage, v2, cfg, loopLogger(t), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got := gptbotVerdict(v2, "198.51.100.7"); got != agents.Spoofed {
		t.Errorf("second handler: %v, want Spoofed at once", got)
	}
	eventually(t, "304 rounds", func() bool { return srv.hits.Load() >= 4 })
	if n := srv.full.Load(); n != 1 {
		t.Errorf("%d full downloads, want 1 (then 304s)", n)
	}
	if d := counterValue(t, "openai-gptbot", "ok") - okBefore; d != 1 {
		t.Errorf("ok counted %v times", d)
	}
	if d := counterValue(t, "openai-gptbot", "not_modified") - nmBefore; d < 2 {
		t.Errorf("not_modified counted %v times", d)
	}

	// A changed list reaches both verifiers.
	srv.serve(rangesJSON("198.51.100.0/24"), `"2"`)
	eventually(t, "the changed list", func() bool {
		return gptbotVerdict(v1, "198.51.100.7") == agents.Verified && gptbotVerdict(v2, "198.51.100.7") == agents.Verified
	})

	// Kept in storage: body, ETag and fetch time.
	data, err := storage.Load(context.Background(), StorageKey("openai-gptbot"))
	if err != nil {
		t.Fatal(err)
	}
	var sr storedRanges
	if err := json.Unmarshal(data, &sr); err != nil {
		t.Fatal(err)
	}
	if len(sr.Sources) != 1 || sr.Sources[0].ETag != `"2"` || !strings.Contains(string(sr.Sources[0].Body), "198.51.100.0/24") ||
		time.Since(sr.Sources[0].Fetched) > time.Minute {
		t.Errorf("stored %+v", sr)
	}

	if err := release1(); err != nil {
		t.Fatal(err)
	}
	if err := release1(); err != nil { // a second release is harmless
		t.Fatal(err)
	}
	hits := srv.hits.Load()
	time.Sleep(250 * time.Millisecond)
	if srv.hits.Load() == hits {
		t.Error("loop stopped while a handler still uses it")
	}
	if err := release2(); err != nil {
		t.Fatal(err)
	}
	hits = srv.hits.Load()
	time.Sleep(250 * time.Millisecond)
	if d := srv.hits.Load() - hits; d > 0 {
		t.Errorf("%d downloads after the last handler left", d)
	}
}

// TestRangesRestartFromStorage: after a restart with the publisher down,
// the list kept in storage is used (Spoofed outside it); a rejected
// download (broken JSON) keeps it too.
func TestRangesRestartFromStorage(t *testing.T) {
	srv := newRangesServer(t, rangesJSON("203.0.113.0/24"))
	dir := t.TempDir()
	cfg := Config{Refresh: time.Hour, URLs: map[string]string{"openai-gptbot": srv.URL + "/gptbot.json"}}
	v := newRangesVerifier(t)
	release, err := Start(&certmagic.FileStorage{Path: dir}, v, cfg, loopLogger(t), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first download", func() bool { return gptbotVerdict(v, "198.51.100.7") == agents.Spoofed })
	eventually(t, "the list kept", func() bool {
		_, err := (&certmagic.FileStorage{Path: dir}).Load(context.Background(), StorageKey("openai-gptbot"))
		return err == nil
	})
	if err := release(); err != nil {
		t.Fatal(err)
	}

	// Restart: the publisher is down.
	srv.mu.Lock()
	srv.status = http.StatusInternalServerError
	srv.mu.Unlock()
	errBefore := counterValue(t, "openai-gptbot", "error")
	v2 := newRangesVerifier(t)
	release, err = Start(&certmagic.FileStorage{Path: dir}, v2, cfg, loopLogger(t), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	eventually(t, "the kept list", func() bool { return gptbotVerdict(v2, "198.51.100.7") == agents.Spoofed })
	eventually(t, "the failed download", func() bool { return counterValue(t, "openai-gptbot", "error") > errBefore })
	if got := gptbotVerdict(v2, "203.0.113.5"); got != agents.Verified {
		t.Errorf("kept list, inside: %v", got)
	}
}

// TestRangesRejectedKeepsLastGood: broken JSON from the publisher is
// counted as rejected and the verifier keeps the last good list.
func TestRangesRejectedKeepsLastGood(t *testing.T) {
	srv := newRangesServer(t, rangesJSON("203.0.113.0/24"))
	cfg := Config{Refresh: 50 * time.Millisecond, URLs: map[string]string{"openai-gptbot": srv.URL + "/g.json"}}
	core, logs := observer.New(zapcore.WarnLevel)
	v := newRangesVerifier(t)
	rejBefore := counterValue(t, "openai-gptbot", "rejected")
	release, err := Start(nil, v, cfg, zap.New(core), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	eventually(t, "the first download", func() bool { return gptbotVerdict(v, "198.51.100.7") == agents.Spoofed })
	srv.serve(`{"prefixes": [{"ipv4Prefix": "198.51.`, `"broken"`)
	eventually(t, "a rejection", func() bool { return counterValue(t, "openai-gptbot", "rejected") > rejBefore })
	if got := gptbotVerdict(v, "198.51.100.7"); got != agents.Spoofed {
		t.Errorf("after a broken download: %v, want Spoofed (last good list)", got)
	}
	rejected := logs.FilterMessageSnippet("rejected downloaded IP list")
	if rejected.Len() == 0 || !strings.Contains(fmt.Sprint(rejected.All()[0].ContextMap()["error"]), "JSON") {
		t.Errorf("no warning naming the JSON error: %v", logs.All())
	}
}

// TestWarnStaleRanges: with downloads off, the methods whose embedded
// list is too old to prove a spoof are named once, with the fix.
func TestWarnStaleRanges(t *testing.T) {
	t.Setenv(OperatorsEnv, "")
	v := newRangesVerifier(t)
	stale := v.StaleLists()
	if len(stale) == 0 {
		t.Skip("the embedded snapshot is fresh; nothing to warn about")
	}
	core, logs := observer.New(zapcore.WarnLevel)
	logger := zap.New(core)

	on, _ := NewConfig(DefaultRefresh, true, nil)
	WarnStale(logger, v, on)
	if logs.Len() != 0 {
		t.Fatalf("warned although downloads cover every method: %v", logs.All())
	}
	off, _ := NewConfig(0, true, nil)
	staleWarned = sync.Map{}
	WarnStale(logger, v, off)
	WarnStale(logger, v, off) // once
	if logs.Len() != 1 {
		t.Fatalf("%d warnings, want 1", logs.Len())
	}
	e := logs.All()[0]
	fields := e.ContextMap()
	if got := fmt.Sprint(fields["methods"]); !strings.Contains(got, "openai-gptbot") || !strings.Contains(got, "duckduckgo") {
		t.Errorf("methods %v", got)
	}
	if fix := fmt.Sprint(fields["fix"]); !strings.Contains(fix, "ranges_refresh") {
		t.Errorf("fix %q", fix)
	}
	if !strings.Contains(e.Message, "spoof") {
		t.Errorf("message %q", e.Message)
	}

	// A file for one method removes it from the warning.
	v2, err := agents.NewVerifier(agents.VerifierConfig{Ranges: map[string][]netip.Prefix{"openai-gptbot": {netip.MustParsePrefix("203.0.113.0/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	staleWarned = sync.Map{}
	WarnStale(logger, v2, off)
	if got := fmt.Sprint(logs.All()[1].ContextMap()["methods"]); strings.Contains(got, "openai-gptbot") {
		t.Errorf("methods %v include one given a fresh list", got)
	}
}

// TestRangesLoadFiles: lists given as files are read for the verifier; a
// bad file is an error naming the method.
func TestRangesLoadFiles(t *testing.T) {
	dir := t.TempDir()
	good, bad := dir+"/good.txt", dir+"/bad.txt"
	if err := os.WriteFile(good, []byte("203.0.113.0/24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a list\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewConfig(DefaultRefresh, true, map[string]string{"openai-gptbot": good})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := c.LoadFiles()
	if err != nil || len(m["openai-gptbot"]) != 1 {
		t.Fatalf("LoadFiles: %v %v", m, err)
	}
	c, _ = NewConfig(DefaultRefresh, true, map[string]string{"perplexitybot": bad})
	if _, _, err := c.LoadFiles(); err == nil || !strings.Contains(err.Error(), "perplexitybot") {
		t.Errorf("bad file: %v", err)
	}
	if m, _, err := (Config{}).LoadFiles(); m != nil || err != nil {
		t.Errorf("no files: %v %v", m, err)
	}
}
