package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

// redisProc is a real redis-server on a loopback port, started for the tests.
type redisProc struct {
	cmd  *exec.Cmd
	port int
	dir  string
}

var (
	redisMu  sync.Mutex
	redisCur *redisProc
)

// needRedis returns a running redis-server, starting one if needed. Without
// redis-server on PATH the test fails under CI=true and skips elsewhere.
func needRedis(t *testing.T) *redisProc {
	t.Helper()
	redisMu.Lock()
	defer redisMu.Unlock()
	if redisCur != nil {
		return redisCur
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not found: CI must install it (make test runs scripts/need-redis.sh)")
		}
		t.Skip("redis-server not found: run `make test`, or install redis-server")
	}
	// A port of its own, reserved until the tests end: the outage test
	// restarts redis-server on the same port.
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	dir, err := os.MkdirTemp("", "robots-redis-")
	if err != nil {
		t.Fatal(err)
	}
	r := &redisProc{port: port, dir: dir}
	if err := r.start(bin); err != nil {
		t.Fatal(err)
	}
	redisCur = r
	return r
}

func (r *redisProc) start(bin string) error {
	r.cmd = exec.Command(bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--protected-mode", "yes")
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r.ping() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on port %d did not answer PING", r.port)
}

func (r *redisProc) ping() bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

func (r *redisProc) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

func (r *redisProc) restart(t *testing.T) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.start(bin); err != nil {
		t.Fatal(err)
	}
}

func (r *redisProc) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func stopRedis() {
	redisMu.Lock()
	defer redisMu.Unlock()
	if redisCur != nil {
		redisCur.stop()
		_ = os.RemoveAll(redisCur.dir)
		redisCur = nil
	}
}

// secondCaddy builds cmd/caddy and runs it as a separate process with the
// given Caddyfile: a second instance of the site.
func secondCaddy(t *testing.T, caddyfile string) {
	t.Helper()
	dir := t.TempDir()
	bin := caddyBinary(t)
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfg, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	logf, _ := os.Create(filepath.Join(dir, "caddy.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting second caddy: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(dir, "caddy.log"))
			t.Logf("second caddy log:\n%s", out)
		}
	})
	eventually(t, 20*time.Second, "the second caddy to listen", func() bool {
		conn, err := net.DialTimeout("tcp", hostPort("127.0.0.1", altPort), 200*time.Millisecond)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

const sharedRules = `"User-agent: *\nDisallow: /trap/\nCrawl-delay: 3\n"`

func sharedSite(port int, redisURL, prefix string) string {
	return fmt.Sprintf(`http://shared.localhost:%d {
	robots {
		crawl_burst 1
		source inline %s
		strikes 2 1m 1h
		store redis %s {
			prefix %s
			timeout 100ms
		}
	}
	respond "instance %d"
}
`, port, sharedRules, redisURL, prefix, port)
}

// TestRedisTwoInstances: two Caddy processes sharing one Redis enforce one
// Crawl-delay budget for a crawler alternating between them, and strikes
// collected on one ban the crawler on the other. Then Redis goes away:
// requests keep being served (fail open) and errors are counted; when it
// comes back, the shared budget is enforced again.
func TestRedisTwoInstances(t *testing.T) {
	r := needRedis(t)
	prefix := fmt.Sprintf("it%d", time.Now().UnixNano())
	c := newClient(t, strings.Replace(globals, "auto_https off", `auto_https off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}`, 1)+sharedSite(httpPort, r.url(), prefix))
	secondCaddy(t, `{
	admin localhost:`+strconv.Itoa(admin2Port)+`
	http_port `+strconv.Itoa(altPort)+`
	auto_https off
	persist_config off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
}
`+sharedSite(altPort, r.url(), prefix))

	a, b := siteURL("shared.localhost"), "http://"+hostPort("shared.localhost", altPort)
	const ua = "SharedBot/1.0 (+https://shared.example/bot)"
	c.expect(a+"/page", ua, 200, fmt.Sprintf("instance %d", httpPort))
	res := c.expect(b+"/page", ua, 503)
	if res.header.Get("Retry-After") == "" {
		t.Error("no Retry-After from the second instance")
	}
	c.expect(a+"/page", ua, 503)

	// Strikes: one on each instance bans on both. GreedyBot comes from
	// its own address (X-Forwarded-For from the trusted loopback proxy):
	// strikes and bans of unverified bots belong to their address.
	const bad = "GreedyBot/1.0 (+https://greedy.example/bot)"
	greedy := func(url string, status int, contains string) {
		t.Helper()
		res := c.get(url, bad, "X-Forwarded-For: 203.0.113.66")
		if res.status != status || !strings.Contains(res.body, contains) {
			t.Errorf("GreedyBot %s: %d %q, want %d containing %q", url, res.status, res.body, status, contains)
		}
	}
	greedy(a+"/trap/1", 403, "Disallow: /trap/")
	greedy(b+"/trap/2", 403, "Disallow: /trap/")
	greedy(a+"/page", 403, "banned until")
	greedy(b+"/page", 403, "banned until")
	greedy(a+"/robots.txt", 200, "")
	c.expect(a+"/page", chromeUA, 200)

	// A ban lifted on one instance is gone from the other's list and
	// decisions within a second or two.
	if !strings.Contains(bansOn(t, admin2Port), "GreedyBot") {
		t.Fatalf("the second instance does not list GreedyBot's ban: %s", bansOn(t, admin2Port))
	}
	req, _ := http.NewRequest(http.MethodDelete, adminURL()+"/robots/bans?crawler=GreedyBot", nil)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("unban on the first instance: %v %v", res, err)
	}
	lifted := time.Now()
	eventually(t, 2*time.Second, "the ban gone from the second instance", func() bool {
		return !strings.Contains(bansOn(t, admin2Port), "GreedyBot")
	})
	greedy(b+"/page", 200, "")
	t.Logf("[report] redis: a ban lifted on one instance left the other's list in %s", time.Since(lifted).Round(time.Millisecond))

	// Redis stops: fail open, errors counted.
	r.stop()
	checkTwoInstancesOutage(t, c, a, b, bad)
	// Redis returns: the shared budget is enforced again.
	r.restart(t)
	n := 0
	eventually(t, 10*time.Second, "enforcement to resume from Redis", func() bool {
		n++
		ub := fmt.Sprintf("BackBot%d/1.0 (+https://back.example/bot)", n)
		return c.get(a+"/page", ub).status == 200 && c.get(b+"/page", ub).status == 503
	})
}

// bansOn returns the list of bans the admin API on port admin serves.
func bansOn(t *testing.T, admin int) string {
	t.Helper()
	res, err := http.Get("http://" + hostPort("localhost", admin) + "/robots/bans")
	if err != nil {
		t.Fatalf("GET /robots/bans on %d: %v", admin, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return string(body)
}

// checkTwoInstancesOutage checks, while the Redis of TestRedisTwoInstances
// is down, that both instances a and b fail open, that the ban lifted on
// bad does not come back, and that the errors and decisions are counted.
func checkTwoInstancesOutage(t *testing.T, c client, a, b, bad string) {
	t.Helper()
	const outage = "OutageBot/1.0 (+https://outage.example/bot)"
	for i, base := range []string{a, b} {
		// From an address of its own: "*"-judged bots share their
		// address's budget, and loopback's was spent above.
		if res := c.get(base+"/page", outage, fmt.Sprintf("X-Forwarded-For: 203.0.113.%d", 80+i)); res.status != 200 {
			t.Errorf("OutageBot during the outage on %s: %d %q, want 200 (fail open)", base, res.status, res.body)
		}
		c.expect(base+"/page", chromeUA, 200)
	}
	// The lifted ban does not come back from an instance's local copy
	// (a throttle, from the local budget, may answer).
	if res := c.get(b+"/other", bad, "X-Forwarded-For: 203.0.113.66"); res.status == 403 {
		t.Errorf("GreedyBot on the second instance during the outage: %d %q: the lifted ban came back", res.status, res.body)
	}
	if n := metricValue(t, adminURL()+"/metrics", `caddy_robots_state_errors_total{store="redis"}`); n < 1 {
		t.Errorf("state errors counted during the outage: %v, want > 0", n)
	}
	for action, reason := range map[string]string{"allow": "none", "block": "rule", "throttle": "rate", "ban": "ban"} {
		series := `action="` + action + `",category="other",mode="enforce",reason="` + reason + `"` // of every site block
		if n := undeclaredMetric(t, "caddy_robots_decisions_total", series); n < 1 {
			t.Errorf("%s = %v, want > 0", series, n)
		}
	}
}

// metricValue reads one sample from a Prometheus text endpoint.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, series+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, series)), 64)
			return v
		}
	}
	return 0
}

// TestRedisDownFairness: while Redis is unreachable, decisions come from
// the local store (fail open), and a crawler seen for the first time is
// judged on its own: it never gets someone else's ban. A ban earned during
// the outage stays in force when Redis is back, and Redis learns it.
func TestRedisDownFairness(t *testing.T) {
	r := needRedis(t)
	c := newClient(t, globals+siteURL("redisdown.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
		crawl_delay off
		store redis `+r.url()+` {
			prefix redisdown
			timeout 50ms
		}
	}
	respond "ok"
}
`)
	u := siteURL("redisdown.localhost")
	const rogue, newcomer = "OutageRogue/1.0 (+https://rogue.example/bot)", "FirstTimer/1.0 (+https://first.example/bot)"
	c.expect(u+"/", rogue, 200)
	r.stop()
	defer func() {
		if !r.ping() {
			r.restart(t) // for the tests after this one
		}
	}()
	for i := range 2 {
		c.get(u+"/private/"+string(rune('a'+i)), rogue)
	}
	c.expect(u+"/", rogue, 403, "banned")
	// Seen for the first time, from the same address, during the outage.
	c.expect(u+"/", newcomer, 200, "ok")
	r.restart(t)
	// Redis is back: the ban earned during the outage holds, and Redis
	// has it (a second, fresh handler state would read it there).
	eventually(t, 10*time.Second, "the outage ban to reach Redis", func() bool {
		out, err := exec.Command("redis-cli", "-p", strconv.Itoa(r.port), "--scan", "--pattern", "redisdown*:ban").Output()
		return err == nil && strings.Contains(string(out), "OutageRogue")
	})
	c.expect(u+"/", rogue, 403, "banned")
	c.expect(u+"/", newcomer, 200, "ok")
}
