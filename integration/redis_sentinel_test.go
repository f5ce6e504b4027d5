package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

// sentinelMaster is the name the Sentinels monitor the master under.
const sentinelMaster = "robots"

// sentinelDownAfter is the Sentinels' down-after-milliseconds: how long the
// master may be unreachable before a Sentinel calls it down.
const sentinelDownAfter = 1000 * time.Millisecond

// redisSentinels is a real Sentinel setup on loopback, made by the test: a
// master, one replica of it, and three Sentinels monitoring it with a
// quorum of two.
type redisSentinels struct {
	master, replica *clusterNode
	sentinels       []*clusterNode
	clients         []*redis.SentinelClient // one per Sentinel
	replicaClient   *redis.Client
}

// needRedisSentinels starts the master, its replica and the three
// Sentinels, each Sentinel from a config file of its own (Sentinel rewrites
// it as it learns the setup), and waits until every Sentinel knows the
// replica and the two other Sentinels: before that a failover cannot
// happen.
func needRedisSentinels(t *testing.T) *redisSentinels {
	t.Helper()
	server, _ := clusterTools(t)
	ports, err := freeport.Take(5)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &redisSentinels{}
	var all []*clusterNode
	t.Cleanup(func() {
		for _, n := range all {
			n.kill()
			if t.Failed() {
				out, _ := os.ReadFile(n.log)
				t.Logf("redis-server %d log (tail):\n%s", n.port, tail(string(out), 1500))
			}
		}
	})
	start := func(port int, args ...string) *clusterNode {
		n := &clusterNode{port: port, log: filepath.Join(dir, fmt.Sprintf("redis-%d.log", port))}
		n.cmd = exec.Command(server, args...)
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("starting redis-server %d: %v", port, err)
		}
		all = append(all, n)
		return n
	}
	data := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--dbfilename", fmt.Sprintf("dump-%d.rdb", port),
			"--logfile", filepath.Join(dir, fmt.Sprintf("redis-%d.log", port))}
	}
	s.master = start(ports[0], data(ports[0])...)
	s.replica = start(ports[1], append(data(ports[1]), "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))...)
	for _, port := range ports[2:] {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", port))
		text := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
logfile %s
sentinel monitor %s 127.0.0.1 %d 2
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s 5000
sentinel parallel-syncs %s 1
`, port, dir, filepath.Join(dir, fmt.Sprintf("redis-%d.log", port)),
			sentinelMaster, ports[0], sentinelMaster, sentinelDownAfter.Milliseconds(), sentinelMaster, sentinelMaster)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s.sentinels = append(s.sentinels, start(port, conf, "--sentinel"))
	}
	s.replicaClient = s.replica.client(t)
	waitFor(t, 15*time.Second, "the replica to be in sync with the master", func() bool {
		repl, err := s.replicaClient.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(repl, "master_link_status:up")
	})
	for _, n := range s.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = sc.Close() })
		s.clients = append(s.clients, sc)
		waitFor(t, 30*time.Second, fmt.Sprintf("Sentinel %d to know the replica and the other two Sentinels", n.port), func() bool {
			m, err := sc.Master(context.Background(), sentinelMaster).Result()
			return err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2" && m["flags"] == "master"
		})
	}
	return s
}

// url is the setup's address for store redis: the Sentinels, one as the
// host and two as addr.
func (s *redisSentinels) url() string {
	return fmt.Sprintf("redis+sentinel://%s?master_name=%s&addr=%s&addr=%s",
		s.sentinels[0].addr(), sentinelMaster, s.sentinels[1].addr(), s.sentinels[2].addr())
}

// crashMaster kills the master once the replica holds the keys matching
// banKeys, and returns when.
func (s *redisSentinels) crashMaster(t *testing.T, banKeys string) time.Time {
	t.Helper()
	waitFor(t, 10*time.Second, "the replica to hold the ban", func() bool {
		keys, err := s.replicaClient.Keys(context.Background(), banKeys).Result()
		return err == nil && len(keys) == 1
	})
	s.master.kill()
	return time.Now()
}

// promoted reports whether every Sentinel names the replica as the master
// (SENTINEL GET-MASTER-ADDR-BY-NAME) and the replica says it is one.
func (s *redisSentinels) promoted() bool {
	want := []string{"127.0.0.1", strconv.Itoa(s.replica.port)}
	for _, sc := range s.clients {
		addr, err := sc.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		if err != nil || len(addr) != 2 || addr[0] != want[0] || addr[1] != want[1] {
			return false
		}
	}
	r, err := s.replicaClient.Do(context.Background(), "ROLE").Slice()
	return err == nil && len(r) > 0 && r[0] == "master"
}

// failoverSeen is what one instance did between the master's crash and the
// replica's promotion.
type failoverSeen struct {
	// The banned bot's requests: refused as banned (403), served (200),
	// or otherwise answered (throttled: 503).
	refused, served, other int
	storeErr               string // the store error its status page showed
}

// watchFailover sends the banned bot's request to each instance in turn,
// and reads each one's status page, until the Sentinels have promoted the
// replica. It returns what each instance did meanwhile, and how long the
// promotion took from killed.
func watchFailover(t *testing.T, s *redisSentinels, ins []clusterInstance, ua, from string, killed time.Time) (map[int]*failoverSeen, time.Duration) {
	t.Helper()
	seen := map[int]*failoverSeen{}
	for _, in := range ins {
		seen[in.http] = &failoverSeen{}
	}
	waitFor(t, 60*time.Second, "the Sentinels to promote the replica", func() bool {
		if s.promoted() {
			return true
		}
		for _, in := range ins {
			switch res := clusterGet(t, in.url("/page"), ua, from); res.status {
			case 403:
				seen[in.http].refused++
			case 200:
				seen[in.http].served++
			default:
				seen[in.http].other++
			}
			// Keep the first error that names a cause, else the last.
			if healthy, _, errText := storeOf(t, in); !healthy && !strings.Contains(seen[in.http].storeErr, "refused") {
				seen[in.http].storeErr = errText
			}
		}
		return false
	})
	return seen, time.Since(killed)
}

// TestRedisSentinelFailover: three Caddy processes share a real master and
// replica watched by three Sentinels, through redis+sentinel://. A crawler
// spraying its requests across them gets one Crawl-delay budget; strikes
// earned on two instances ban it on the third; the master crashes, the
// Sentinels promote the replica, and every instance soon decides from the
// new master again: the ban enforced from it, listed by /robots/bans, new
// strikes and budgets shared through it.
func TestRedisSentinelFailover(t *testing.T) {
	sentinels := needRedisSentinels(t)
	prefix := fmt.Sprintf("se%d", time.Now().UnixNano())
	ins := sharedStoreInstances(t, sentinels.url(), prefix)

	t.Run("budget shared", func(t *testing.T) { clusterBudgetShared(t, "redis sentinel", ins, "198.51.100.7") })

	// Strikes on two instances ban on the third.
	const greedy = "GreedyBot/1.0 (+https://greedy.example/bot)"
	const greedyAddr = "203.0.113.66"
	strikeOut(t, ins, greedy, greedyAddr)

	killed := sentinels.crashMaster(t, prefix+":*:ban")
	seen, promotion := watchFailover(t, sentinels, ins, greedy, greedyAddr, killed)
	promoted := time.Now()
	t.Logf("[report] redis sentinel: master crashed, every Sentinel named the promoted replica after %s (down-after-milliseconds %d, quorum 2 of 3)",
		promotion.Round(100*time.Millisecond), sentinelDownAfter.Milliseconds())
	// Meanwhile each instance's status page named the dead master and why,
	// and the two that had learnt the ban from Redis (through the strike
	// and the ban check) enforced their copy of it.
	for i, in := range ins {
		got := seen[in.http]
		t.Logf("[report] redis sentinel: during the failover instance %d refused the banned bot %d time(s), served it %d, throttled it %d; status store error: %q",
			in.http, got.refused, got.served, got.other, got.storeErr)
		if !strings.Contains(got.storeErr, sentinels.master.addr()) || !strings.Contains(got.storeErr, "connection refused") {
			t.Errorf("instance %d's status during the failover: store error %q, want the dead master %s's connection refused",
				in.http, got.storeErr, sentinels.master.addr())
		}
		if i > 0 && got.served+got.other > 0 {
			t.Errorf("instance %d answered the banned bot %d time(s) without refusing it during the failover, though it had learnt the ban",
				in.http, got.served+got.other)
		}
	}

	// Every instance enforces the ban from the promoted replica soon after
	// the Sentinels name it: an instance that kept dialling the dead master
	// would keep deciding locally, and the one without a copy of the ban
	// (the first: it saw one strike) would serve the banned bot meanwhile.
	for _, in := range ins {
		served := enforcedFromRedis(t, in, greedy, greedyAddr)
		t.Logf("[report] redis sentinel: instance %d enforced the ban from the promoted replica %s after the promotion, having served the banned bot %d time(s) meanwhile",
			in.http, time.Since(promoted).Round(100*time.Millisecond), served)
		listsBan(t, in, "GreedyBot")
	}

	// Strikes and budgets are shared through the promoted replica.
	strikeOut(t, []clusterInstance{ins[1], ins[2], ins[0]}, "EagerBot/1.0 (+https://eager.example/bot)", "203.0.113.77")
	t.Run("budget shared after failover", func(t *testing.T) { clusterBudgetShared(t, "redis sentinel", ins, "192.0.2.7") })
}

// strikeOut sends ua from from into the trap on the first two instances and
// checks that the third, which saw no strike, refuses it as banned, and
// still serves it /robots.txt.
func strikeOut(t *testing.T, ins []clusterInstance, ua, from string) {
	t.Helper()
	for i, in := range ins[:2] {
		if res := clusterGet(t, in.url(fmt.Sprintf("/trap/%d", i)), ua, from); res.status != 403 {
			t.Fatalf("%s in the trap on instance %d: %d %q", ua, in.http, res.status, res.body)
		}
	}
	if res := clusterGet(t, ins[2].url("/page"), ua, from); res.status != 403 || !strings.Contains(res.body, "banned until") {
		t.Fatalf("%s on instance %d after strikes on %d and %d: %d %q, want 403 banned",
			ua, ins[2].http, ins[0].http, ins[1].http, res.status, res.body)
	}
	if res := clusterGet(t, ins[2].url("/robots.txt"), ua, from); res.status != 200 {
		t.Errorf("banned %s's /robots.txt on instance %d: %d", ua, ins[2].http, res.status)
	}
}

// enforcedFromRedis sends the banned bot's request to in until one is
// refused as banned while in's status page says it decides from Redis
// (healthy, not deciding locally): the refusal came from Redis, not from a
// local copy of the ban kept for outages. It returns how many of them in
// served (200) first.
func enforcedFromRedis(t *testing.T, in clusterInstance, ua, from string) (served int) {
	t.Helper()
	storeSays := ""
	eventually(t, 15*time.Second, fmt.Sprintf("instance %d to enforce the ban from Redis after the failover", in.http), func() bool {
		res := clusterGet(t, in.url("/page"), ua, from)
		if res.status != 403 || !strings.Contains(res.body, "banned until") {
			if res.status == 200 {
				served++
			}
			return false
		}
		healthy, local, errText := storeOf(t, in)
		storeSays = fmt.Sprintf("healthy %v, deciding locally %v, error %q", healthy, local, errText)
		return healthy && !local
	})
	if t.Failed() {
		t.Logf("instance %d's store, last read: %s", in.http, storeSays)
	}
	return served
}
