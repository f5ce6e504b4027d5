package agents

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openData opens a reference data file the identification tests read,
// relative to this package, and registers its closing. The files are in the
// repository (see NOTICE): the crawler lists under data/upstream are the
// ones the catalogue is built from, the rest are under testdata. A name
// ending in .gz is read decompressed.
func openData(t testing.TB, name string) io.Reader {
	t.Helper()
	f, err := os.Open(filepath.FromSlash(name))
	if err != nil {
		t.Fatalf("reference data: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	if !strings.HasSuffix(name, ".gz") {
		return f
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("reference data %s: %v", name, err)
	}
	return z
}

type crawlerRecord struct {
	Pattern   string   `json:"pattern"`
	Instances []string `json:"instances"`
	Tags      []string `json:"tags"`
}

func loadCrawlerRecords(t testing.TB) []crawlerRecord {
	var recs []crawlerRecord
	if err := json.NewDecoder(openData(t, "data/upstream/crawler-user-agents.json")).Decode(&recs); err != nil {
		t.Fatalf("decoding crawler-user-agents.json: %v", err)
	}
	return recs
}

func loadAIRobots(t testing.TB) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.NewDecoder(openData(t, "data/upstream/ai-robots-txt-robots.json")).Decode(&m); err != nil {
		t.Fatalf("decoding ai-robots-txt-robots.json: %v", err)
	}
	return m
}

func loadBrowsers(t testing.TB) []string {
	sc := bufio.NewScanner(openData(t, "testdata/browsers/browser-user-agents.txt.gz"))
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
