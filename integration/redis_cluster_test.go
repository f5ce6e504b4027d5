package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

// clusterNodeTimeout is the cluster's cluster-node-timeout: how long a
// master may be unreachable before its replica takes over.
const clusterNodeTimeout = 1000 * time.Millisecond

// redisCluster is a real Redis Cluster on loopback, made by the test: three
// masters, each with one replica.
type redisCluster struct {
	dir   string
	nodes []*clusterNode
}

// clusterNode is one redis-server of the cluster.
type clusterNode struct {
	port, busPort int
	cmd           *exec.Cmd
	log           string
}

func (n *clusterNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// client returns a client of this node alone (not cluster-aware).
func (n *clusterNode) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// kill stops the node at once, as a crash does.
func (n *clusterNode) kill() {
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
		n.cmd = nil
	}
}

// needRedisCluster starts six redis-servers in cluster mode and joins them
// with redis-cli --cluster create: three masters and three replicas. Each
// node's cluster bus port is set explicitly (cluster-port), from the same
// reserved free ports as the client ports.
func needRedisCluster(t testing.TB) *redisCluster {
	t.Helper()
	server, cli := clusterTools(t)
	ports, err := freeport.Take(12)
	if err != nil {
		t.Fatal(err)
	}
	c := &redisCluster{dir: t.TempDir()}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.kill()
			if t.Failed() {
				out, _ := os.ReadFile(n.log)
				t.Logf("redis-server %d log (tail):\n%s", n.port, tail(string(out), 1500))
			}
		}
	})
	for i := range 6 {
		n := &clusterNode{port: ports[2*i], busPort: ports[2*i+1]}
		n.log = filepath.Join(c.dir, fmt.Sprintf("node-%d.log", n.port))
		n.cmd = exec.Command(server, "--port", strconv.Itoa(n.port), "--cluster-port", strconv.Itoa(n.busPort),
			"--bind", "127.0.0.1", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(c.dir, fmt.Sprintf("nodes-%d.conf", n.port)),
			"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout.Milliseconds())),
			"--save", "", "--appendonly", "no", "--dir", c.dir, "--logfile", n.log)
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("starting redis-server %d: %v", n.port, err)
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		nc := n.client(t)
		waitFor(t, 10*time.Second, "redis-server "+n.addr()+" to answer PING", func() bool {
			return nc.Ping(context.Background()).Err() == nil
		})
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.nodes {
		args = append(args, n.addr())
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// Ready: every node sees the cluster as ok, and every master has a
	// replica in sync (or a failover would lose the keys).
	waitFor(t, 30*time.Second, "the cluster to be ok with a replica per master", func() bool {
		masters := 0
		for _, n := range c.nodes {
			info, err := n.client(t).ClusterInfo(context.Background()).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			repl, err := n.client(t).Info(context.Background(), "replication").Result()
			if err != nil {
				return false
			}
			if strings.Contains(repl, "role:master") {
				if !strings.Contains(repl, "connected_slaves:1") {
					return false
				}
				masters++
			} else if !strings.Contains(repl, "master_link_status:up") {
				return false
			}
		}
		return masters == 3
	})
	return c
}

// waitFor is eventually for tests and benchmarks: it retries f until it
// returns true, failing tb after timeout.
func waitFor(tb testing.TB, timeout time.Duration, what string, f func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// clusterTools returns the paths of redis-server and redis-cli. Without them
// the test fails under CI=true and skips elsewhere, like the other Redis
// tests (make test installs both: scripts/need-redis.sh).
func clusterTools(t testing.TB) (server, cli string) {
	t.Helper()
	for _, name := range []string{"redis-server", "redis-cli"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found: CI must install it (make test runs scripts/need-redis.sh)", name)
			}
			t.Skipf("%s not found: run `make test`, or install redis-server and redis-tools", name)
		}
		if name == "redis-server" {
			server = p
		} else {
			cli = p
		}
	}
	return server, cli
}

// url is the cluster's address for store redis: one seed node and two more.
func (c *redisCluster) url() string {
	return fmt.Sprintf("redis+cluster://%s?addr=%s&addr=%s", c.nodes[0].addr(), c.nodes[1].addr(), c.nodes[2].addr())
}

// role returns "master" or "slave" for the node, as it says itself.
func (c *redisCluster) role(t testing.TB, n *clusterNode) string {
	r, err := n.client(t).Do(context.Background(), "ROLE").Slice()
	if err != nil || len(r) == 0 {
		return ""
	}
	s, _ := r[0].(string)
	return s
}

// holder returns the live master holding a key that matches pattern, and
// its replica, or nil.
func (c *redisCluster) holder(t testing.TB, pattern string) (master, replica *clusterNode) {
	for _, n := range c.nodes {
		if n.cmd == nil || c.role(t, n) != "master" {
			continue
		}
		keys, err := n.client(t).Keys(context.Background(), pattern).Result()
		if err != nil || len(keys) == 0 {
			continue
		}
		id, err := n.client(t).Do(context.Background(), "CLUSTER", "MYID").Text()
		if err != nil {
			continue
		}
		for _, r := range c.nodes {
			if r == n || r.cmd == nil {
				continue
			}
			info, err := r.client(t).Do(context.Background(), "CLUSTER", "NODES").Text()
			if err != nil {
				continue
			}
			for _, line := range strings.Split(info, "\n") {
				f := strings.Fields(line)
				if len(f) > 3 && strings.Contains(f[2], "myself") && strings.Contains(f[2], "slave") && f[3] == id {
					return n, r
				}
			}
		}
		return n, nil
	}
	return nil, nil
}

// caddyProcess runs cmd/caddy as a process of its own with caddyfile, and
// waits until it serves on port.
func caddyProcess(t *testing.T, caddyfile string, port int) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddyBinary(t), "run", "--config", cfg, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	logPath := filepath.Join(dir, "caddy.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting caddy on %d: %v", port, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("caddy on port %d, log (tail):\n%s", port, tail(string(out), 3000))
		}
	})
	eventually(t, 30*time.Second, fmt.Sprintf("caddy to listen on %d", port), func() bool {
		conn, err := net.DialTimeout("tcp", hostPort("127.0.0.1", port), 200*time.Millisecond)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// clusterRules: one Crawl-delay for every crawler, a trap.
const clusterRules = `"User-agent: *\nDisallow: /trap/\nCrawl-delay: 3\n"`

// clusterInstance is one of the Caddy instances sharing the cluster.
type clusterInstance struct{ http, admin int }

func (in clusterInstance) url(path string) string {
	return "http://" + hostPort("127.0.0.1", in.http) + path
}

// clusterSite is the Caddyfile of one instance. The per-call timeout is
// 1s: the test asserts sharing, not latency, and a loaded 2-core machine
// must not turn a slow answer into a local (fail-open) decision.
func clusterSite(in clusterInstance, url, prefix string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	auto_https off
	persist_config off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
}
http://127.0.0.1:%d {
	robots {
		crawl_burst 1
		source inline %s
		strikes 2 1m 1h
		store redis %s {
			prefix %s
			timeout 1s
		}
	}
	respond "instance %d"
}
`, in.admin, in.http, in.http, clusterRules, url, prefix, in.http)
}

// clusterGet sends GET url as ua from the address from (X-Forwarded-For, the
// instances trusting loopback as their proxy): unverified crawlers' budgets
// and strikes belong to their address.
func clusterGet(t *testing.T, url, ua, from string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("X-Forwarded-For", from)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return response{status: res.StatusCode, body: string(body), header: res.Header}
}

// storeOf reads an instance's store facts from /robots/status.
func storeOf(t *testing.T, in clusterInstance) (healthy, local bool, errText string) {
	t.Helper()
	res, err := http.Get("http://" + hostPort("localhost", in.admin) + "/robots/status")
	if err != nil {
		return false, false, err.Error()
	}
	defer res.Body.Close()
	var st struct {
		Handlers []struct {
			Store struct {
				Healthy         bool   `json:"healthy"`
				DecidingLocally bool   `json:"deciding_locally"`
				Error           string `json:"error"`
			} `json:"store"`
		} `json:"handlers"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || len(st.Handlers) == 0 {
		return false, false, fmt.Sprintf("decoding /robots/status: %v", err)
	}
	s := st.Handlers[0].Store
	return s.Healthy, s.DecidingLocally, s.Error
}

// TestRedisClusterThreeInstances: three Caddy processes share a real
// 3-master Redis Cluster through redis+cluster://. A crawler spraying its
// requests across the three gets one Crawl-delay budget; strikes earned on
// two instances ban it on the third; a master holding that ban crashes, its
// replica takes over, and the ban is still enforced from Redis, with
// budgets still shared.
func TestRedisClusterThreeInstances(t *testing.T) {
	cluster := needRedisCluster(t)
	prefix := fmt.Sprintf("cl%d", time.Now().UnixNano())
	ins := sharedStoreInstances(t, cluster.url(), prefix)

	const sprayAddr = "198.51.100.7"
	t.Run("budget shared", func(t *testing.T) { clusterBudgetShared(t, "redis cluster", ins, sprayAddr) })
	sprayKey := ""
	if m, _ := cluster.holder(t, prefix+":*"+sprayAddr+"*:rate"); m != nil {
		keys, _ := m.client(t).Keys(context.Background(), prefix+":*"+sprayAddr+"*:rate").Result()
		sprayKey = keys[0]
	}
	if sprayKey == "" {
		t.Fatalf("no throttle key for %s in the cluster", sprayAddr)
	}

	// Strikes on two instances ban on the third.
	const greedy = "GreedyBot/1.0 (+https://greedy.example/bot)"
	const greedyAddr = "203.0.113.66"
	strikeOut(t, ins, greedy, greedyAddr)

	promoted := crashBanHolder(t, cluster, prefix+":*:ban")

	// Every instance enforces the ban from the promoted replica soon after
	// the failover, well within go-redis's own topology refresh (a minute):
	// an instance that keeps sending the crashed master's slots to its dead
	// address fails open, and would serve the banned bot all that time. No
	// admin call comes first, since listing bans reloads the topology itself
	// and would hide such an instance.
	for _, in := range ins {
		served := 0
		eventually(t, 15*time.Second, fmt.Sprintf("instance %d to enforce the ban after the failover", in.http), func() bool {
			res := clusterGet(t, in.url("/page"), greedy, greedyAddr)
			if res.status == 403 && strings.Contains(res.body, "banned until") {
				return true
			}
			served++
			return false
		})
		t.Logf("[report] redis cluster: instance %d enforced the ban after the failover, having served the banned bot %d time(s) while failing open",
			in.http, served)
		eventually(t, 10*time.Second, fmt.Sprintf("instance %d to decide from the cluster again", in.http), func() bool {
			healthy, local, _ := storeOf(t, in)
			return healthy && !local
		})
		// The list scans every master: it finds the ban on the promoted one
		// once the client has the new topology.
		listsBan(t, in, "GreedyBot")
	}
	// Budgets stay shared, for an address whose budget lives on the
	// promoted master (the keys of other addresses live elsewhere).
	addr := addressOn(t, promoted, sprayKey, sprayAddr)
	t.Run("budget shared after failover", func(t *testing.T) { clusterBudgetShared(t, "redis cluster", ins, addr) })

	// The promoted replica crashes too: its shard has no node left.
	promoted.kill()
	t.Run("status names a lost shard", func(t *testing.T) { clusterShardLost(t, ins, promoted) })
}

// clusterShardLost checks that every instance's status page calls its store
// unhealthy, naming the dead node, once a shard of the cluster has no node
// left. The other masters still answer a PING, so a status that pinged one
// node would say healthy most of the time: after the first report of the
// loss, six more in a row must say it too.
func clusterShardLost(t *testing.T, ins []clusterInstance, dead *clusterNode) {
	for _, in := range ins {
		lost := func() bool {
			healthy, _, errText := storeOf(t, in)
			return !healthy && strings.Contains(errText, dead.addr())
		}
		eventually(t, 10*time.Second, fmt.Sprintf("instance %d's status to report the lost shard", in.http), lost)
		if _, _, errText := storeOf(t, in); in == ins[0] {
			t.Logf("[report] redis cluster: a shard lost, the status page's store error: %s", errText)
		}
		for i := range 6 {
			if !lost() {
				healthy, _, errText := storeOf(t, in)
				t.Fatalf("instance %d's status, read %d after it first reported the lost shard at %s: healthy=%v, error %q",
					in.http, i+2, dead.addr(), healthy, errText)
			}
		}
	}
}

// sharedStoreInstances starts three Caddy processes whose robots state is
// in the Redis at url (keys under prefix), and waits until each reports
// its store healthy and decides from it.
func sharedStoreInstances(t *testing.T, url, prefix string) []clusterInstance {
	t.Helper()
	ports, err := freeport.Take(6)
	if err != nil {
		t.Fatal(err)
	}
	var ins []clusterInstance
	for i := range 3 {
		in := clusterInstance{http: ports[2*i], admin: ports[2*i+1]}
		caddyProcess(t, clusterSite(in, url, prefix), in.http)
		ins = append(ins, in)
	}
	for _, in := range ins {
		eventually(t, 15*time.Second, fmt.Sprintf("instance %d to report its store healthy", in.http), func() bool {
			healthy, local, _ := storeOf(t, in)
			return healthy && !local
		})
	}
	return ins
}

// listsBan waits until in's /robots/bans lists a ban of the crawler name.
func listsBan(t *testing.T, in clusterInstance, name string) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("instance %d's /robots/bans to list %s", in.http, name), func() bool {
		res, err := http.Get("http://" + hostPort("localhost", in.admin) + "/robots/bans")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return strings.Contains(string(body), name)
	})
}

// crashBanHolder kills the master holding the ban keys (banKeys, a
// pattern) once its replica holds them too, waits for the replica's
// promotion, and returns it.
func crashBanHolder(t *testing.T, cluster *redisCluster, banKeys string) *clusterNode {
	t.Helper()
	master, replica := cluster.holder(t, banKeys)
	if master == nil || replica == nil {
		t.Fatalf("no live master with a replica holds %s", banKeys)
	}
	rc := replica.client(t)
	eventually(t, 10*time.Second, "the replica to hold the ban", func() bool {
		keys, err := rc.Do(context.Background(), "KEYS", banKeys).StringSlice()
		return err == nil && len(keys) == 1
	})
	master.kill()
	killed := time.Now()
	eventually(t, 30*time.Second, "the replica of the crashed master to be promoted", func() bool {
		return cluster.role(t, replica) == "master"
	})
	t.Logf("[report] redis cluster: replica of the crashed master promoted after %s (cluster-node-timeout %s)",
		time.Since(killed).Round(100*time.Millisecond), clusterNodeTimeout)
	if got, _ := cluster.holder(t, banKeys); got != replica {
		t.Fatalf("the promoted replica does not hold the ban")
	}
	return replica
}

// addressOn returns an address of 192.0.2.0/24 whose throttle key lives on
// node n: the key of an address is key (that of keyAddr) with its address
// replaced.
func addressOn(t *testing.T, n *clusterNode, key, keyAddr string) string {
	t.Helper()
	for i := 1; i < 255; i++ {
		a := fmt.Sprintf("192.0.2.%d", i)
		slot, err := n.client(t).ClusterKeySlot(context.Background(), strings.Replace(key, keyAddr, a, 1)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ownsSlot(t, n, slot) {
			return a
		}
	}
	t.Fatalf("no address of 192.0.2.0/24 has its key on %s", n.addr())
	return ""
}

// clusterBudgetShared sprays a crawler's requests from addr across the
// instances, round robin, and checks that together they admit no more than
// one client's Crawl-delay budget, and that every instance refused some.
// store names the shared store in the report line.
func clusterBudgetShared(t *testing.T, store string, ins []clusterInstance, addr string) {
	const ua = "SprayBot/1.0 (+https://spray.example/bot)"
	const n = 24
	admitted := 0
	refusedBy := map[int]int{}
	start := time.Now()
	for i := range n {
		in := ins[i%len(ins)]
		switch res := clusterGet(t, in.url(fmt.Sprintf("/page/%d", i)), ua, addr); res.status {
		case 200:
			admitted++
		case 503:
			refusedBy[in.http]++
			if res.header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After from %d", in.http)
			}
		default:
			t.Fatalf("request %d on %d: %d %q", i, in.http, res.status, res.body)
		}
	}
	elapsed := time.Since(start)
	// GCRA with Crawl-delay t and burst 1 admits at most 1 + (elapsed +
	// tolerance)/t requests in elapsed.
	delay := 3 * time.Second
	bound := 1 + int((elapsed+state.Tolerance(delay))/delay)
	if admitted < 1 || admitted > bound {
		t.Errorf("admitted %d of %d requests over %s across %d instances, want 1..%d (one client's budget)",
			admitted, n, elapsed.Round(time.Millisecond), len(ins), bound)
	}
	for _, in := range ins {
		if refusedBy[in.http] == 0 {
			t.Errorf("instance %d refused none of the spray: it does not share the budget", in.http)
		}
	}
	t.Logf("[report] %s: %d requests sprayed over %d instances in %s, %d admitted (one client's budget: %d)",
		store, n, len(ins), elapsed.Round(time.Millisecond), admitted, bound)
}

// ownsSlot reports whether node n is the master serving slot.
func ownsSlot(t *testing.T, n *clusterNode, slot int64) bool {
	shards, err := n.client(t).ClusterShards(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	for _, s := range shards {
		mine := slices.ContainsFunc(s.Nodes, func(x redis.Node) bool {
			return x.Role == "master" && x.Port == int64(n.port) && x.Health == "online"
		})
		for _, r := range s.Slots {
			if mine && r.Start <= slot && slot <= r.End {
				return true
			}
		}
	}
	return false
}

// BenchmarkRedisClusterSharedBudget: three stores (three instances) on one
// real 3-master Redis Cluster, nine goroutines beside the benchmark's own
// (three per store) all spending one crawler's Crawl-delay budget (5ms,
// burst 1) as fast as they can, each request being what a bot's request
// asks the store: its ban, then its budget. Reported:
//
//   - %over-budget: how many more requests were admitted than the budget
//     allows over the run (GCRA: 1 + (elapsed + tolerance)/interval), in
//     percent of it; the goal is at most 1.
//   - %of-budget: admitted in percent of that budget (how much of it the
//     shared budget actually used).
//   - p50-µs, p99-µs: what a bot request pays for Redis (both calls)
//     under that load, both cores busy.
//   - unloaded-p99-µs: the same, measured first, one request at a time.
//   - errors: calls that failed (each would have been decided locally).
//
// Run it with: go test ./integration -run '^$' -bench RedisClusterSharedBudget -benchtime 3s
func BenchmarkRedisClusterSharedBudget(b *testing.B) {
	cluster := needRedisCluster(b)
	prefix := fmt.Sprintf("bench%d", time.Now().UnixNano())
	var stores []*state.Redis
	for range 3 {
		opts, err := state.RedisClientOptions(cluster.url(), nil)
		if err != nil {
			b.Fatal(err)
		}
		s, err := state.NewRedis(state.RedisConfig{Client: redis.NewUniversalClient(opts), Prefix: prefix,
			Timeout: time.Second, CloseClient: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		if err := s.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		stores = append(stores, s)
	}
	id := state.NewIdentity("SprayBot", false, netip.MustParseAddr("198.51.100.9"))
	pace := state.Pace{Interval: 5 * time.Millisecond}
	var admitted, failed atomic.Int64
	request := func(s *state.Redis, lat *[]time.Duration) {
		start := time.Now()
		_, err1 := s.Banned(context.Background(), id, start)
		res, err2 := s.ThrottlePace(context.Background(), id, pace, start)
		*lat = append(*lat, time.Since(start))
		if err1 != nil || err2 != nil {
			failed.Add(1)
		} else if res.Allowed {
			admitted.Add(1)
		}
	}
	// Unloaded first: one bot at a time, on fresh identities (the keys
	// spread over the masters), through each instance in turn.
	var quiet []time.Duration
	for i := range 3000 {
		one := state.NewIdentity("QuietBot", false, netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}))
		start := time.Now()
		_, err1 := stores[i%3].Banned(context.Background(), one, start)
		_, err2 := stores[i%3].ThrottlePace(context.Background(), one, pace, start)
		quiet = append(quiet, time.Since(start))
		if err1 != nil || err2 != nil {
			b.Fatalf("unloaded request %d: %v %v", i, err1, err2)
		}
	}
	slices.Sort(quiet)
	quietP99 := float64(quiet[len(quiet)*99/100].Microseconds())

	const perStore = 3
	lats := make([][]time.Duration, 3*perStore+1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range 3 * perStore {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					request(stores[i%3], &lats[i+1])
				}
			}
		})
	}
	for b.Loop() {
		request(stores[0], &lats[0])
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(begin)
	budget := 1 + int64((elapsed+state.Tolerance(pace.Interval))/pace.Interval)
	over := max(admitted.Load()-budget, 0)
	all := slices.Concat(lats...)
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(100*float64(over)/float64(budget), "%over-budget")
	b.ReportMetric(100*float64(admitted.Load())/float64(budget), "%of-budget")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(failed.Load()), "errors")
	b.ReportMetric(quietP99, "unloaded-p99-µs") // after b.Loop, whose first call clears metrics
	b.Logf("[report] redis cluster, 3 instances, %d requests over %s: %d admitted, budget %d (%.2f%% over), p50 %.0fµs, p99 %.0fµs, %d errors; unloaded p99 %.0fµs",
		len(all), elapsed.Round(time.Millisecond), admitted.Load(), budget, 100*float64(over)/float64(budget), pct(0.5), pct(0.99), failed.Load(), quietP99)
}

// tlsRedis starts a redis-server that speaks only TLS on a free port, with
// ca's server certificate for 127.0.0.1, and returns the port.
func tlsRedis(t *testing.T, ca testCA) int {
	t.Helper()
	server, _ := clusterTools(t)
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(server, "--port", "0", "--tls-port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1",
		"--tls-cert-file", ca.certFile, "--tls-key-file", ca.keyFile, "--tls-ca-cert-file", ca.caFile,
		"--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a TLS redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually(t, 10*time.Second, "the TLS redis-server to listen", func() bool {
		c, err := net.DialTimeout("tcp", hostPort("127.0.0.1", ports[0]), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return ports[0]
}

// TestRedisTLSThroughCaddy: two sites on one TLS-only Redis. The one whose
// tls block names the CA shares its state through Redis; the one without
// (the system's roots, which do not know this CA) still serves, from local
// state, and the status page names the certificate error instead of a bare
// "context deadline exceeded".
func TestRedisTLSThroughCaddy(t *testing.T) {
	ca := newTestCA(t, "127.0.0.1")
	port := tlsRedis(t, ca)
	url := fmt.Sprintf("rediss://127.0.0.1:%d", port)
	prefix := fmt.Sprintf("tls%d", time.Now().UnixNano())
	site := func(host, tlsBlock string) string {
		return fmt.Sprintf(`http://%s {
	robots {
		crawl_burst 1
		source inline "User-agent: *\nCrawl-delay: 3\n"
		store redis %s {
			prefix %s-%s
			%s
		}
	}
	respond "ok"
}
`, at(host), url, prefix, strings.Split(host, ".")[0], tlsBlock)
	}
	c := newClient(t, globals+site("tlsgood.localhost", "tls {\n\t\t\t\tca "+ca.caFile+"\n\t\t\t}")+site("tlsbad.localhost", ""))

	var st struct {
		Handlers []struct {
			Store struct {
				Healthy         bool   `json:"healthy"`
				DecidingLocally bool   `json:"deciding_locally"`
				Error           string `json:"error"`
			} `json:"store"`
		} `json:"handlers"`
	}
	healthy, named, shown := 0, 0, ""
	eventually(t, 10*time.Second, "the status page to show one store healthy and name the other's certificate error", func() bool {
		adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
		healthy, named = 0, 0
		for _, h := range st.Handlers {
			switch {
			case h.Store.Healthy && !h.Store.DecidingLocally:
				healthy++
			case strings.Contains(h.Store.Error, "certificate signed by unknown authority"):
				named++
				shown = h.Store.Error
			}
		}
		return healthy == 1 && named == 1
	})
	t.Logf("[report] redis: the status page's store error for a server signed by an unknown CA: %s", shown)

	// Requests once the good site's store is up (before, they are decided
	// locally: fail open).
	const ua = "TLSBot/1.0 (+https://tls.example/bot)"
	c.expect(siteURL("tlsgood.localhost")+"/a", ua, 200)
	c.expect(siteURL("tlsgood.localhost")+"/b", ua, 503)
	// Decided locally (fail open): served, and throttled from local state.
	c.expect(siteURL("tlsbad.localhost")+"/a", ua, 200)

	// The good site's budget is in Redis, over TLS.
	rc := redis.NewClient(&redis.Options{Addr: hostPort("127.0.0.1", port), TLSConfig: ca.clientTLS(t)})
	defer rc.Close()
	keys, err := rc.Keys(context.Background(), prefix+"-tlsgood:*").Result()
	if err != nil || len(keys) == 0 {
		t.Errorf("no key of the TLS site in Redis: %v %v", keys, err)
	}
	if bad, _ := rc.Keys(context.Background(), prefix+"-tlsbad:*").Result(); len(bad) != 0 {
		t.Errorf("the site without the CA wrote to Redis: %v", bad)
	}
}
