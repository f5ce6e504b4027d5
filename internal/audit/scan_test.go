package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// caddyLine is the subset of a Caddy access-log line the scanner reads,
// decoded by encoding/json for comparison.
type caddyLine struct {
	TS      any `json:"ts"`
	Status  int `json:"status"`
	Request *struct {
		RemoteIP string              `json:"remote_ip"`
		ClientIP string              `json:"client_ip"`
		Method   string              `json:"method"`
		Host     string              `json:"host"`
		URI      string              `json:"uri"`
		Headers  map[string][]string `json:"headers"`
		TLS      json.RawMessage     `json:"tls"`
	} `json:"request"`
}

// TestScannerMatchesEncodingJSON parses generated lines (with escapes of
// every kind in the strings) with the scanner and with encoding/json and
// compares the fields.
func TestScannerMatchesEncodingJSON(t *testing.T) {
	g := newGenerator(t, 7)
	var s Scanner
	var e Entry
	tricky := []string{
		`Odd"Bot/1.0`, `back\slash/2`, "tab\there", "nl\nbot", "é-bot/1 ☃", "emoji 😀 bot", "ctl\u0001x",
		`</script><b>`, "\u2028sep",
	}
	for i := range 20000 {
		line := g.line(i)
		if i%10 == 0 {
			// Replace the User-Agent by a tricky one, encoded by encoding/json
			// (which escapes <, >, &, U+2028 and control characters).
			ua, _ := json.Marshal(tricky[i/10%len(tricky)])
			line = bytes.Replace(line, []byte(`"User-Agent":[`), append([]byte(`"User-Agent":[`), append(ua, ',')...), 1)
		}
		if i%13 == 0 {
			// \u escapes and a surrogate pair in the URI.
			line = bytes.Replace(line, []byte(`"uri":"/`), []byte(`"uri":"/\u00e9\ud83d\ude00\/x/`), 1)
		}
		var want caddyLine
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("generator wrote invalid JSON: %v\n%s", err, line)
		}
		if !s.Parse(line, &e) {
			t.Fatalf("scanner refused a valid line:\n%s", line)
		}
		ua := ""
		if h := want.Request.Headers["User-Agent"]; len(h) > 0 {
			ua = h[0]
		}
		got := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d", e.Method, e.Host, e.URI, e.UserAgent, e.RemoteIP, e.ClientIP, e.Status)
		exp := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d", want.Request.Method, want.Request.Host, want.Request.URI, ua,
			want.Request.RemoteIP, want.Request.ClientIP, want.Status)
		if got != exp {
			t.Fatalf("line %d:\n got %q\nwant %q\n%s", i, got, exp, line)
		}
		if e.Signals != policy.HeaderSignals(want.Request.Headers) || e.TLS != (want.Request.TLS != nil) || !e.HasHeaders {
			t.Fatalf("line %d: signals %b TLS %v, want %b %v\n%s", i, e.Signals, e.TLS, policy.HeaderSignals(want.Request.Headers), want.Request.TLS != nil, line)
		}
		if f, ok := want.TS.(float64); ok {
			if d := e.Time.Sub(time.Unix(0, int64(f*1e9))); d > time.Microsecond || d < -time.Microsecond {
				t.Fatalf("ts %v read as %v", f, e.Time)
			}
		}
	}
}

func TestScannerRejectsBrokenLines(t *testing.T) {
	var s Scanner
	var e Entry
	for _, l := range []string{
		``, `not json`, `{"ts":1,`, `{"request":{"uri":"/a}}`, `{"a" 1}`, `[1,2]`, `{"ts":1}x`,
		`{"request":{"uri":"/a","headers":{"User-Agent":["x"}}}`,
	} {
		if s.Parse([]byte(l), &e) {
			t.Errorf("accepted %q", l)
		}
	}
	ok := `{"level":"info","ts":"2026-05-11T11:46:40.25Z","request":{"uri":"/x","headers":{"user-agent":["Foo/1"]}},"status":404}`
	if !s.Parse([]byte(ok), &e) || string(e.UserAgent) != "Foo/1" || e.Status != 404 || e.Time.Format(time.RFC3339Nano) != "2026-05-11T11:46:40.25Z" {
		t.Errorf("string ts / lower-case header: %+v", e)
	}
}

// generator writes realistic Caddy access-log lines: mostly browsers (from
// testdata/browsers.txt), and crawlers, some claiming a name from the wrong
// address, some fast.
type generator struct {
	rng      *rand.Rand
	browsers []string
	t        float64
}

var crawlerUAs = []struct{ ua, ip string }{
	{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "66.249.64.%d"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot", "4.227.36.%d"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot", "198.51.100.%d"},
	{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "157.55.39.%d"},
	{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "54.36.148.%d"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "3.12.1.%d"},
	{"CCBot/2.0 (https://commoncrawl.org/faq/)", "18.97.9.%d"},
	{"python-requests/2.32.3", "203.0.113.%d"},
	{"curl/8.5.0", "192.0.2.%d"},
	{"ExampleCrawler/1.0 (+https://example.com/bot)", "192.0.2.%d"},
}

var paths = []string{"/", "/blog/post-%d", "/private/doc-%d", "/search?q=%d", "/static/app.%d.js", "/robots.txt", "/private/public/%d.png", "/products/%d?color=red&size=xl"}

func newGenerator(t testing.TB, seed uint64) *generator {
	f, err := os.Open("testdata/browsers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := &generator{rng: rand.New(rand.NewPCG(seed, 1)), t: 1778500000}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			g.browsers = append(g.browsers, l)
		}
	}
	return g
}

func (g *generator) line(i int) []byte {
	g.t += g.rng.Float64() * 0.05
	var ua, ip, sec string
	if g.rng.IntN(10) < 6 {
		ua = g.browsers[g.rng.IntN(len(g.browsers))]
		ip = fmt.Sprintf("203.0.%d.%d", g.rng.IntN(256), g.rng.IntN(256))
		// What a browser sends over HTTPS; one line in 50 is a script
		// that only wears the browser's User-Agent.
		if g.rng.IntN(50) != 0 {
			sec = browserSecHeaders(ua)
		}
	} else {
		c := crawlerUAs[g.rng.IntN(len(crawlerUAs))]
		ua, ip = c.ua, fmt.Sprintf(c.ip, g.rng.IntN(8)+1)
	}
	p := paths[g.rng.IntN(len(paths))]
	if strings.Contains(p, "%d") {
		p = fmt.Sprintf(p, g.rng.IntN(5000))
	}
	client := ""
	if i%3 == 0 {
		client = `"client_ip":"` + ip + `",`
	}
	ua, _ = jsonString(ua)
	return fmt.Appendf(nil, `{"level":"info","ts":%.7f,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"%s","remote_port":"%d",%s"proto":"HTTP/2.0","method":"GET","host":"example.com","uri":"%s","headers":{"Accept-Encoding":["gzip, deflate, br"],%s"User-Agent":[%s],"Accept":["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"],"Accept-Language":["en-US,en;q=0.9"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"example.com"}},"bytes_read":0,"user_id":"","duration":0.000%d,"size":%d,"status":%d,"resp_headers":{"Server":["Caddy"],"Content-Type":["text/html; charset=utf-8"]}}`,
		g.t, ip, 40000+g.rng.IntN(20000), client, p, sec, ua, 100+g.rng.IntN(900), g.rng.IntN(50000), []int{200, 200, 200, 304, 404, 403}[g.rng.IntN(6)])
}

// browserSecHeaders are the headers a browser of ua's engine sends with a
// navigation over HTTPS, as Caddy logs them: Fetch Metadata from every
// engine, and the client hints from Chromium.
func browserSecHeaders(ua string) string {
	const fetch = `"Sec-Fetch-Site":["none"],"Sec-Fetch-Mode":["navigate"],"Sec-Fetch-User":["?1"],"Sec-Fetch-Dest":["document"],"Upgrade-Insecure-Requests":["1"],`
	if strings.Contains(ua, "Chrome/") {
		return `"Sec-Ch-Ua":["\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\""],"Sec-Ch-Ua-Mobile":["?0"],"Sec-Ch-Ua-Platform":["\"Windows\""],` + fetch
	}
	return fetch
}

func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}
