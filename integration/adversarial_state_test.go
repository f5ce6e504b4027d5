package integration

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floodClient sends many requests fast: keep-alive connections, a few at a
// time. Its get reports the status, or 0 for a transport error.
type floodClient struct{ c *http.Client }

func newFloodClient() floodClient {
	return floodClient{&http.Client{
		Timeout:   20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true},
	}}
}

// get sends GET path to this run's HTTP port with the Host host, the
// User-Agent ua and extra "Key: value" headers.
func (f floodClient) get(host, path, ua string, headers ...string) int {
	req, err := http.NewRequest(http.MethodGet, "http://"+httpAddr()+path, nil)
	if err != nil {
		return 0
	}
	req.Host = host
	req.Header.Set("User-Agent", ua)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := f.c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

// flood calls req(i) for i in [0, n) from workers goroutines and returns
// how many times each status came back.
func flood(n, workers int, req func(i int) int) map[int]int {
	var next atomic.Int64
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := map[int]int{}
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					break
				}
				local[req(i)]++
			}
			mu.Lock()
			for s, c := range local {
				counts[s] += c
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return counts
}

// TestAdversarialBanFlood: a ban outlives any flood of other clients'
// entries. The store holds 200 identities; 3,000 allowed requests from
// distinct networks, each with a throttle entry of its own, and with a new
// Host each on a catch-all site, leave the ban in force and listed.
func TestAdversarialBanFlood(t *testing.T) {
	cfg := trustLocalProxy()
	dir := advSite(t, "User-agent: *\nDisallow: /private/\n")
	newClient(t, cfg+fmt.Sprintf("http://:%d", httpPort)+` {
	root * `+dir+`
	robots {
		source inline "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n"
		strikes 2 10m 1h
		store memory 200
	}
	file_server
}
`)
	const rogue = "FlushedBot/1.0 (+https://flushed.example/bot)"
	fc := newFloodClient()
	for i := range 2 {
		fc.get(at("banflood.localhost"), fmt.Sprintf("/private/%d", i), rogue, "X-Forwarded-For: 198.51.100.77")
	}
	if s := fc.get(at("banflood.localhost"), "/index.html", rogue, "X-Forwarded-For: 198.51.100.77"); s != 403 {
		t.Fatalf("the rogue is not banned before the flood: %d", s)
	}
	counts := flood(3000, 8, func(i int) int {
		return fc.get(at(fmt.Sprintf("f%d.banflood.localhost", i)), "/index.html", "FloodBot/1.0 (+https://flood.example/bot)",
			fmt.Sprintf("X-Forwarded-For: 2001:db8:%x:%x::1", i>>16, i&0xffff))
	})
	if counts[200] < 2900 {
		t.Fatalf("the flood's requests were not allowed: %v", counts)
	}
	if s := fc.get(at("banflood.localhost"), "/index.html", rogue, "X-Forwarded-For: 198.51.100.77"); s != 403 {
		t.Errorf("after a flood of %v, the banned rogue got %d, want 403", counts, s)
	}
	var list bansList
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &list)
	found := false
	for _, b := range list.Bans {
		found = found || b.Crawler == "FlushedBot" && b.Network == "198.51.100.77/32"
	}
	if !found {
		t.Errorf("/robots/bans does not list the rogue's ban after the flood: %+v", list)
	}
}

// TestAdversarialCrawlDelayHostHopping: a Crawl-delay budget is per site
// block where the rules do not depend on the Host: a bot sending a new Host
// header with each request to a catch-all site gets its 503 after the same
// burst as one with a fixed Host. With source site (each Host its own
// robots.txt), a bot hopping Hosts gets at most the budgets of
// RotationResidents+1 hosts.
func TestAdversarialCrawlDelayHostHopping(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n"
	dir := advSite(t, robots)
	cfg := trustLocalProxy()
	fc := newFloodClient()
	// allowed sends n requests of one bot from address ip, the i-th with
	// Host host(i), and returns how many were allowed and refused with 503.
	allowed := func(name, ip string, n int, host func(i int) string) (ok, throttled int) {
		ua := name + "/1.0 (+https://" + strings.ToLower(name) + ".example/bot)"
		for i := range n {
			switch s := fc.get(host(i), "/index.html?n="+strconv.Itoa(i), ua, "X-Forwarded-For: "+ip); s {
			case 200:
				ok++
			case 503:
				throttled++
			default:
				t.Fatalf("%s request %d: %d", name, i, s)
			}
		}
		return ok, throttled
	}
	for k, source := range []string{`source inline "` + strings.ReplaceAll(robots, "\n", `\n`) + `"`, "source site"} {
		t.Run(strings.Fields(source)[1], func(t *testing.T) {
			newClient(t, cfg+fmt.Sprintf("http://:%d", httpPort)+` {
	root * `+dir+`
	robots {
		`+source+`
		strikes off
	}
	file_server
}
`)
			const n = 40
			suffix := strings.Fields(source)[1] + ".hop.localhost"
			fixedOK, fixedThrottled := allowed("FixedHost", fmt.Sprintf("198.51.100.%d", 10+2*k), n, func(int) string { return at("fixed." + suffix) })
			hopOK, hopThrottled := allowed("HostHopper", fmt.Sprintf("198.51.100.%d", 11+2*k), n, func(i int) string { return at(fmt.Sprintf("h%d.%s", i, suffix)) })
			t.Logf("%s: fixed Host %d allowed, %d throttled; new Host each time %d allowed, %d throttled", source, fixedOK, fixedThrottled, hopOK, hopThrottled)
			if fixedThrottled == 0 {
				t.Fatalf("the fixed-Host bot was never throttled: %d allowed", fixedOK)
			}
			limit := fixedOK + 1
			if strings.Contains(source, "site") {
				limit = 5 * (fixedOK + 1) // RotationResidents hosts of its own, then one shared budget
			}
			if hopThrottled == 0 || hopOK > limit {
				t.Errorf("a bot sending a new Host each time got %d of %d allowed (%d throttled); a fixed Host got %d, so at most %d", hopOK, n, hopThrottled, fixedOK, limit)
			}
		})
	}
}

// TestAdversarialSiteTableFlood: with source site on a catch-all site, a
// flood of more random Hosts than the site table holds neither evicts the
// site in use nor keeps a new real site out: crawlers of both are judged by
// their robots.txt, with no 503.
func TestAdversarialSiteTableFlood(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\n")
	newClient(t, globals+fmt.Sprintf("http://:%d", httpPort)+` {
	root * `+dir+`
	robots {
		crawl_delay off
		strikes off
	}
	file_server
}
`)
	fc := newFloodClient()
	judged := func(host string) {
		t.Helper()
		if s := fc.get(at(host), "/index.html", exampleUA); s != 200 {
			t.Errorf("%s: an allowed page got %d, want 200", host, s)
		}
		if s := fc.get(at(host), "/private/secret.html", exampleUA); s != 403 {
			t.Errorf("%s: a disallowed page got %d, want 403", host, s)
		}
	}
	judged("real.tableflood.localhost")
	start := time.Now()
	const n = 4096 + 200
	counts := flood(n, 8, func(i int) int {
		if i%500 == 0 {
			fc.get(at("real.tableflood.localhost"), "/index.html", exampleUA) // the real site keeps being served
		}
		return fc.get(at(randHex(12)+".tableflood.localhost"), "/index.html", "FloodBot/1.0 (+https://flood.example/bot)")
	})
	t.Logf("%d random Hosts in %s: %v", n, time.Since(start).Round(time.Millisecond), counts)
	judged("real.tableflood.localhost")
	judged("new.tableflood.localhost")
}
