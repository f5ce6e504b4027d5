package agents

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// sharedData is the team's shared reference data (see its README.md).
const sharedData = "../../shared/data"

// openShared opens a file of the shared data. The tests that need it skip
// when it is missing, except under CI=true, where they fail.
func openShared(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedData, name))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared data missing under CI: %v", err)
		}
		t.Skipf("shared data missing: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

type crawlerRecord struct {
	Pattern   string   `json:"pattern"`
	Instances []string `json:"instances"`
	Tags      []string `json:"tags"`
}

func loadCrawlerRecords(t testing.TB) []crawlerRecord {
	var recs []crawlerRecord
	if err := json.NewDecoder(openShared(t, "crawler-user-agents/crawler-user-agents.json")).Decode(&recs); err != nil {
		t.Fatalf("decoding crawler-user-agents.json: %v", err)
	}
	return recs
}

func loadAIRobots(t testing.TB) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.NewDecoder(openShared(t, "crawler-user-agents/ai-robots-txt-robots.json")).Decode(&m); err != nil {
		t.Fatalf("decoding ai-robots-txt-robots.json: %v", err)
	}
	return m
}

func loadBrowsers(t testing.TB) []string {
	sc := bufio.NewScanner(openShared(t, "browser-user-agents.txt"))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var out []string
	for sc.Scan() {
		if sc.Text() != "" {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading browser-user-agents.txt: %v", err)
	}
	return out
}
