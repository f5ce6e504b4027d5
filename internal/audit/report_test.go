package audit

import (
	"strings"
	"testing"
)

// TestHostTextCountsWhatLinesTextCounts: a site's heading in a report of
// several sites counts the same kinds of requests as the report's summary,
// the HTTP libraries left unjudged (libraries ignore) included.
func TestHostTextCountsWhatLinesTextCounts(t *testing.T) {
	h := HostReport{Host: "a.example", Requests: 9, Browsers: 2, Crawlers: 3, Undeclared: 1, Own: 1, NotJudged: 1, NoUserAgent: 1}
	r := Report{Lines: 9, Browsers: 2, Crawlers: 3, Undeclared: 1, Own: 1, NotJudged: 1, NoUserAgent: 1}
	host, lines := hostText(h), r.linesText()
	for _, part := range []string{"2 by browsers", "3 by crawlers", "1 by undeclared crawlers", "1 by this plugin", "1 by HTTP libraries not judged", "1 without a User-Agent"} {
		if !strings.Contains(lines, part) {
			t.Errorf("summary %q lacks %q", lines, part)
		}
		if !strings.Contains(host, part) {
			t.Errorf("site heading %q lacks %q", host, part)
		}
	}
}
