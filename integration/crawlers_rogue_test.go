package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// scrapySpider follows every link of the site, obeying robots.txt and
// Crawl-delay as Scrapy's documentation tells a polite crawler to.
const scrapySpider = `
import scrapy

class Site(scrapy.Spider):
    name = "site"
    def start_requests(self):
        yield scrapy.Request(self.start)
    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
`

// TestRealCrawlersBesideARogue: Scrapy (ROBOTSTXT_OBEY, DOWNLOAD_DELAY 1)
// and wget (--wait=1) crawl a site whose robots.txt asks for Crawl-delay 1,
// from the same address as a rogue that ignores robots.txt. Neither polite
// crawler is refused or throttled, nor banned by the rogue's strikes; the
// rogue is banned, and the ban's log line names the rogue.
func TestRealCrawlersBesideARogue(t *testing.T) {
	wget := requireCrawler(t, "wget")
	scrapy := requireCrawler(t, "scrapy")
	const pages = 12
	site := t.TempDir()
	writeRogueSite(t, site, pages)
	dir := t.TempDir()
	logPath, robotsLog := filepath.Join(dir, "access.log"), filepath.Join(dir, "robots.log")
	c := newClient(t, globalsWith("\tlog robots {\n\t\tinclude http.handlers.robots\n\t\toutput file "+robotsLog+"\n\t\tlevel INFO\n\t}\n")+crawlURL()+` {
	root * `+site+`
	robots {
		store memory 20101
	}
	file_server
	log {
		output file `+logPath+`
		format json
	}
}
`)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() { // the rogue, until both crawlers are done
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			c.get(crawlURL()+fmt.Sprintf("/private/p%d.html", i%pages), "RogueBot/1.0 (+https://rogue.example/bot)")
			time.Sleep(40 * time.Millisecond)
		}
	}()
	run := func(name string, cmd *exec.Cmd) {
		home := t.TempDir()
		rc := filepath.Join(home, "wgetrc")
		_ = os.WriteFile(rc, nil, 0o644)
		cmd.Env = append(os.Environ(), "HOME="+home, "WGETRC="+rc)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && name == "wget" && ee.ExitCode() == 8) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	script := filepath.Join(dir, "spider.py")
	if err := os.WriteFile(script, []byte(scrapySpider), 0o644); err != nil {
		t.Fatal(err)
	}
	var crawlers sync.WaitGroup
	crawlers.Add(2)
	start := time.Now()
	go func() {
		defer crawlers.Done()
		run("scrapy", exec.Command(scrapy, "runspider", script, "-a", "start="+crawlURL()+"/",
			"-s", "ROBOTSTXT_OBEY=True", "-s", "DOWNLOAD_DELAY=1", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1",
			"-s", "RETRY_ENABLED=False", "-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False"))
	}()
	go func() {
		defer crawlers.Done()
		run("wget", exec.Command(wget, "-r", "-l", "inf", "--wait=1", "-e", "robots=on", "-nv", "-nH", "-P", t.TempDir(), "--tries=1", crawlURL()+"/"))
	}()
	crawlers.Wait()
	close(done)
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // let the logs flush

	by := tallyByAgent(t, logPath)
	t.Logf("in %s: Scrapy %+v, Wget %+v, RogueBot %+v", time.Since(start).Round(time.Second), by["Scrapy"], by["Wget"], by["RogueBot"])
	for _, name := range []string{"Scrapy", "Wget"} {
		tl := by[name]
		if tl == nil || tl.refused > 0 || tl.throttled > 0 || tl.ok < pages+1 {
			t.Errorf("%s, polite beside a rogue: %+v, want every page and no refusal", name, tl)
		}
	}
	if r := by["RogueBot"]; r == nil || r.refused < 10 {
		t.Errorf("the rogue: %+v, want refused and banned", r)
	}
	logText, _ := os.ReadFile(robotsLog)
	for line := range strings.SplitSeq(string(logText), "\n") {
		if strings.Contains(line, "crawler banned") && !strings.Contains(line, `"crawler":"RogueBot"`) {
			t.Errorf("a ban line names another crawler than the rogue: %s", line)
		}
	}
	if !strings.Contains(string(logText), `"crawler":"RogueBot"`) || !strings.Contains(string(logText), "crawler banned") {
		t.Errorf("no ban line for the rogue:\n%s", logText)
	}
}

// writeRogueSite writes the site of TestRealCrawlersBesideARogue into
// site: an index linking as many pages as pages says, each linking a
// private page, and a robots.txt that disallows /private/ and asks for
// Crawl-delay 1.
func writeRogueSite(t *testing.T, site string, pages int) {
	t.Helper()
	write := func(name, body string) {
		p := filepath.Join(site, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var links strings.Builder
	for i := range pages {
		fmt.Fprintf(&links, "<a href=\"/p%02d.html\">page %d</a>\n", i, i)
		write(fmt.Sprintf("p%02d.html", i), fmt.Sprintf("<html><body>page %d <a href=\"/private/p%d.html\">private</a></body></html>\n", i, i))
	}
	for i := range pages {
		write(fmt.Sprintf("private/p%d.html", i), "private")
	}
	write("index.html", "<html><body>\n"+links.String()+"<a href=\"/private/\">private</a></body></html>\n")
	write("robots.txt", "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n")
}

// agentTally counts a crawler's requests by how they were answered.
type agentTally struct{ ok, refused, throttled int }

// tallyByAgent counts the requests of Caddy's access log at logPath by
// the first word of their User-Agent.
func tallyByAgent(t *testing.T, logPath string) map[string]*agentTally {
	t.Helper()
	by := map[string]*agentTally{}
	for _, e := range readAccessLog(t, logPath) {
		ua := ""
		if v := e.Request.Headers["User-Agent"]; len(v) > 0 {
			ua = strings.SplitN(v[0], "/", 2)[0]
		}
		tl := by[ua]
		if tl == nil {
			tl = &agentTally{}
			by[ua] = tl
		}
		switch e.Status {
		case 200, 304:
			tl.ok++
		case 503:
			tl.throttled++
		default:
			tl.refused++
		}
	}
	return by
}
