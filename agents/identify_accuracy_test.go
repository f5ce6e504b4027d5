package agents

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestCrawlerRecall: at least 99.95% of the real crawler User-Agents of
// crawler-user-agents.json are flagged as bots (2,115 of 2,116: the one
// left is an in-app browser, listed in testdata/identify/unclassified.txt).
func TestCrawlerRecall(t *testing.T) {
	recs := loadCrawlerRecords(t)
	seen := map[string]bool{}
	var total, flagged, aiTotal, aiFlagged int
	var missed []string
	for _, r := range recs {
		ai := false
		for _, tag := range r.Tags {
			ai = ai || tag == "ai-crawler"
		}
		for _, in := range r.Instances {
			if seen[in] {
				continue
			}
			seen[in] = true
			total++
			if ai {
				aiTotal++
			}
			if identify(in).Bot {
				flagged++
				if ai {
					aiFlagged++
				}
			} else {
				missed = append(missed, in)
			}
		}
	}
	rate := float64(flagged) / float64(total)
	t.Logf("recall: %d/%d = %.2f%%; ai-crawler: %d/%d", flagged, total, 100*rate, aiFlagged, aiTotal)
	for _, m := range missed {
		t.Logf("missed: %q", m)
	}
	if rate < 0.9995 {
		t.Errorf("recall %.3f%% < 99.95%%", 100*rate)
	}
	checkUnclassified(t, missed)
}

// checkUnclassified keeps testdata/identify/unclassified.txt, the list of
// real crawler User-Agents Identify takes for browsers, honest.
func checkUnclassified(t *testing.T, missed []string) {
	t.Helper()
	data, err := os.ReadFile("testdata/identify/unclassified.txt")
	if err != nil {
		t.Fatalf("reading the unclassified list: %v", err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ua, _, _ := strings.Cut(line, "\t")
		listed[ua] = true
	}
	sort.Strings(missed)
	for _, m := range missed {
		if !listed[m] {
			t.Errorf("not flagged and not listed in testdata/identify/unclassified.txt: %q", m)
		}
		delete(listed, m)
	}
	for ua := range listed {
		t.Errorf("listed as unclassified but now flagged: %q", ua)
	}
}

// TestBrowserFalsePositives: none of 7,707 real browser User-Agents is
// flagged as a bot.
func TestBrowserFalsePositives(t *testing.T) {
	browsers := loadBrowsers(t)
	var fp []string
	for _, b := range browsers {
		if a := identify(b); a.Bot {
			fp = append(fp, fmt.Sprintf("%q (as %q)", b, a.Name))
		}
	}
	t.Logf("false positives: %d/%d", len(fp), len(browsers))
	for _, f := range fp {
		t.Logf("false positive: %s", f)
	}
	if len(browsers) < 7000 {
		t.Errorf("only %d browser strings", len(browsers))
	}
	if len(fp) > 0 {
		t.Errorf("%d browsers flagged as bots, want none", len(fp))
	}
}
