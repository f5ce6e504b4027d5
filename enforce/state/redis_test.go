package state

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisRateLimit is go-redis/redis_rate's Limit: the tests check that the
// store's GCRA makes the decisions of redis_rate's script (transcribed in
// luaGCRA) without importing it. The store never called the library at run
// time: its script cannot pair a HEAD with a GET nor mark retries.
type redisRateLimit struct {
	Rate, Burst int
	Period      time.Duration
}

// rateLimit expresses GCRA with emission interval t and tolerance τ =
// Tolerance(t) as a redis_rate limit and cost.
//
// redis_rate's script, with e = Period/Rate, allows a request of cost c when
// TAT - now <= e*(Burst - c), then sets TAT = max(TAT, now) + e*c; a refusal
// waits TAT + e*(c - Burst) - now. So with e*c = t and e*(Burst - c) = τ it is
// exactly the memory store's GCRA. Both are taken in microseconds (the
// resolution of Redis TIME) and divided by their greatest common divisor g:
// Rate = c = t/g, Burst = (t+τ)/g, Period = t, so e = g. For t = 3s,
// τ = 1s that is Rate 3, Burst 4, cost 3.
func rateLimit(t time.Duration) (redisRateLimit, int) {
	us := max(int64(t/time.Microsecond), 1)
	tau := int64(Tolerance(time.Duration(us)*time.Microsecond) / time.Microsecond)
	g := gcd(us, tau)
	c := int(us / g)
	return redisRateLimit{Rate: c, Burst: int((us + tau) / g), Period: time.Duration(us) * time.Microsecond}, c
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func TestRateLimitParams(t *testing.T) {
	for _, T := range []time.Duration{time.Microsecond, time.Millisecond, 300 * time.Millisecond, time.Second,
		2 * time.Second, 2500 * time.Millisecond, 3 * time.Second, 2*time.Second + time.Microsecond, time.Hour} {
		l, c := rateLimit(T)
		us := T.Microseconds()
		tau := Tolerance(T).Microseconds()
		// e = Period/Rate; e*c must be T and e*(Burst-c) must be τ, exactly
		// in integer microseconds.
		if l.Period.Microseconds()*int64(c) != us*int64(l.Rate) || l.Period.Microseconds()*int64(l.Burst-c) != tau*int64(l.Rate) {
			t.Errorf("T=%v: limit %+v cost %d does not give e*c=%dµs, e*(burst-c)=%dµs", T, l, c, us, tau)
		}
	}
}

// luaGCRA is redis_rate's allowN script transcribed to Go, float for float,
// with now given (the script reads Redis TIME).
type luaGCRA struct{ tat float64 }

func (g *luaGCRA) allow(l redisRateLimit, cost int, now float64) (bool, float64) {
	e := l.Period.Seconds() / float64(l.Rate)
	increment := e * float64(cost)
	burstOffset := e * float64(l.Burst)
	tat := math.Max(g.tat, now)
	newTat := tat + increment
	allowAt := newTat - burstOffset
	diff := now - allowAt
	if diff/e < 0 {
		return false, -diff
	}
	g.tat = newTat
	return true, -1
}

// TestRedisScriptModelMatchesMemory runs random sequences through the memory
// store and through redis_rate's arithmetic with our limit and cost, on
// microsecond times as Redis TIME gives them: decisions and waits agree.
func TestRedisScriptModelMatchesMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, T := range []time.Duration{100 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 7300 * time.Millisecond, time.Minute} {
		m := NewMemory(MemoryConfig{})
		id := NewIdentity("x", true, netip.Addr{})
		var g luaGCRA
		l, c := rateLimit(T)
		base := 300_000_000.0 // seconds since 2017, as the script counts
		at := time.Duration(0)
		agreed := 0
		for range 20_000 {
			at += time.Duration(rng.Int64N(int64(T))) / time.Microsecond * time.Microsecond
			mr := mustThrottle(t, m, id, T, epoch.Add(at))
			ok, retry := g.allow(l, c, base+at.Seconds())
			if ok != mr.Allowed {
				// Only a float rounding exactly on the boundary may differ.
				t.Fatalf("T=%v at %v: memory %+v, redis_rate allowed=%v retry=%v", T, at, mr, ok, retry)
			}
			if !ok {
				if d := math.Abs(retry - mr.RetryAfter.Seconds()); d > 2e-6 {
					t.Fatalf("T=%v at %v: RetryAfter memory %v, redis_rate %vs", T, at, mr.RetryAfter, retry)
				}
			}
			agreed++
		}
		if agreed == 0 {
			t.Fatal("nothing compared")
		}
	}
}

// TestRedisAgreesWithMemory runs random schedules through a real Redis and
// the memory store on one virtual clock (the Redis store decides at the time
// it is given: see newVirtualRedisStore): every decision and every
// Retry-After agree to the microsecond, whatever the machine's load.
// TestRedisReadsItsOwnClock checks the clock the store uses in service.
func TestRedisAgreesWithMemory(t *testing.T) {
	r := newVirtualRedisStore(t, sharedRedis(t), "agree")
	rng := rand.New(rand.NewPCG(5, 6))
	for i, T := range []time.Duration{time.Second, 3 * time.Second, 7300 * time.Millisecond} {
		m := NewMemory(MemoryConfig{})
		id := NewIdentity("agree", false, ip4(uint32(0xc6336401+i)))
		at := epoch
		allowed, refused := 0, 0
		for n := range 2000 {
			// Gaps uniform in [0, T), in whole microseconds as Redis counts.
			at = at.Add(time.Duration(rng.Int64N(int64(T))).Truncate(time.Microsecond))
			mr := mustThrottle(t, m, id, T, at)
			rr := mustThrottle(t, r, id, T, at)
			if mr != rr {
				t.Fatalf("T=%v, request %d at %v: memory %+v, redis %+v", T, n, at.Sub(epoch), mr, rr)
			}
			if mr.Allowed {
				allowed++
			} else {
				refused++
			}
		}
		if allowed == 0 || refused == 0 {
			t.Fatalf("T=%v: the schedule did not exercise both outcomes (%d allowed, %d refused)", T, allowed, refused)
		}
	}
}

// TestRedisReadsItsOwnClock: in service the store decides on the Redis
// server's clock and ignores the time it is given, so instances whose
// clocks disagree share one schedule: a request two hours later by the
// caller's clock is still refused when the hour has not passed on the
// server.
func TestRedisReadsItsOwnClock(t *testing.T) {
	s := newRedisStore(t, sharedRedis(t), freshSite("own-clock"))
	id := NewIdentity("clock", false, ip4(0xc6336410))
	T := time.Hour
	if r := mustThrottle(t, s, id, T, epoch); !r.Allowed {
		t.Fatalf("first request: %+v", r)
	}
	r := mustThrottle(t, s, id, T, epoch.Add(2*T))
	if want := T - Tolerance(T); r.Allowed || r.RetryAfter > want || r.RetryAfter < want-10*time.Minute {
		t.Fatalf("second request, two hours later by the caller's clock: %+v, want refused with about %v to wait", r, want)
	}
}

func TestRedisTwoInstancesShareOneBudget(t *testing.T) {
	addr := sharedRedis(t)
	site := freshSite("shared.example")
	a := newRedisStore(t, addr, site)
	b := newRedisStore(t, addr, site)
	other := newRedisStore(t, addr, freshSite("other.example"))
	id := NewIdentity("GPTBot", false, netip.MustParseAddr("2001:db8::7"))
	T := 3 * time.Second // τ = 1s
	now := time.Now()
	if r := mustThrottle(t, a, id, T, now); !r.Allowed {
		t.Fatalf("first request on instance A refused: %+v", r)
	}
	r := mustThrottle(t, b, id, T, now)
	if r.Allowed || r.RetryAfter < 1900*time.Millisecond || r.RetryAfter > 2*time.Second {
		t.Fatalf("immediate request on instance B: %+v, want refused with ~2s", r)
	}
	if r := mustThrottle(t, a, id, T, now); r.Allowed {
		t.Fatalf("third request on A allowed")
	}
	if r := mustThrottle(t, other, id, T, now); !r.Allowed {
		t.Fatalf("another site shares the budget: %+v", r)
	}
	// Strikes through A ban on B.
	p := StrikePolicy{Strikes: 3, Window: time.Minute, Ban: time.Hour}
	sid := NewIdentity("badbot", true, netip.Addr{})
	for i := 1; i <= 2; i++ {
		if r := mustStrike(t, a, sid, p, now); r.Banned || r.Strikes != i {
			t.Fatalf("strike %d on A: %+v", i, r)
		}
	}
	if br, err := b.Banned(ctx0, sid, now); err != nil || br.Banned || br.Strikes != 2 {
		t.Fatalf("B before the ban: %+v %v", br, err)
	}
	br := mustStrike(t, b, sid, p, now)
	if !br.Banned || br.Strikes != 3 || br.Until.Sub(now) != time.Hour {
		t.Fatalf("third strike on B: %+v", br)
	}
	got, err := a.Banned(ctx0, sid, now)
	if err != nil || !got.Banned || got.Until.Sub(now) > time.Hour || got.Until.Sub(now) < time.Hour-time.Second {
		t.Fatalf("A after the ban: %+v %v", got, err)
	}
	if r := mustStrike(t, a, sid, p, now); !r.Banned || r.Strikes != 0 {
		t.Fatalf("strike during the ban: %+v", r)
	}
	if got, _ := other.Banned(ctx0, sid, now); got.Banned {
		t.Fatal("ban leaked to another site")
	}
}

func TestRedisKeysAndTTLs(t *testing.T) {
	addr := sharedRedis(t)
	site := freshSite("keys.example")
	s := newRedisStore(t, addr, site)
	id := NewIdentity("GPTBot", false, netip.MustParseAddr("203.0.113.7"))
	now := time.Now()
	mustThrottle(t, s, id, 5*time.Second, now)
	mustStrike(t, s, id, StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}, now)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	stem := "caddy-robots:" + site + ":{u:GPTBot@203.0.113.7/32}"
	for key, max := range map[string]time.Duration{stem + ":rate": 7 * time.Second, stem + ":strikes": time.Minute} {
		ttl, err := c.PTTL(ctx0, key).Result()
		if err != nil || ttl <= 0 || ttl > max {
			t.Errorf("key %s: TTL %v %v, want in (0, %v]", key, ttl, err, max)
		}
	}
	mustStrike(t, s, id, StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}, now)
	if ttl, err := c.PTTL(ctx0, stem+":ban").Result(); err != nil || ttl <= time.Hour-time.Minute || ttl > time.Hour {
		t.Errorf("ban key TTL %v %v", ttl, err)
	}
	if n, _ := c.Exists(ctx0, stem+":strikes").Result(); n != 0 {
		t.Error("strike counter kept after the ban")
	}
	keys, _ := c.Keys(ctx0, "rate:*").Result()
	if len(keys) != 0 {
		t.Errorf("keys outside the prefix: %v", keys)
	}
}

func TestRedisErrorsAndTimeout(t *testing.T) {
	// A server that accepts and never answers: every call must give up
	// after the store's timeout, with an error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	opts, err := ParseRedisURL("redis://" + l.Addr().String() + "?max_retries=-1")
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewUniversalClient(opts)
	s, err := NewRedis(RedisConfig{Client: c, CloseClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := NewIdentity("x", false, netip.MustParseAddr("192.0.2.1"))
	begin := time.Now()
	_, err = s.Throttle(ctx0, id, time.Second, time.Now())
	if el := time.Since(begin); err == nil || el > 20*DefaultRedisTimeout {
		t.Fatalf("throttle on a silent server: err %v after %v", err, el)
	}
	t.Logf("silent server: %v after %v", err, time.Since(begin))
	if _, err := s.Strike(ctx0, id, DefaultStrikePolicy(), time.Now(), testInfo(id)); err == nil {
		t.Fatal("strike on a silent server: no error")
	}
	if _, err := s.Banned(ctx0, id, time.Now()); err == nil {
		t.Fatal("ban check on a silent server: no error")
	}
	if _, err := NewRedis(RedisConfig{}); err == nil {
		t.Fatal("NewRedis without client: no error")
	}
	if _, err := NewRedis(RedisConfig{Client: c, Site: "a{b"}); err == nil {
		t.Fatal("NewRedis accepted a brace in the site")
	}
}

// failoverErrors records what a Failover reports through its onError.
type failoverErrors struct {
	n           atomic.Int64
	unavailable atomic.Int64 // of n, those that wrap ErrUnavailable
	last        atomic.Pointer[string]
}

// record is the Failover's onError.
func (e *failoverErrors) record(err error) {
	e.n.Add(1)
	if errors.Is(err, ErrUnavailable) {
		e.unavailable.Add(1)
	}
	msg := err.Error()
	e.last.Store(&msg)
}

func TestFailoverOutageAndRecovery(t *testing.T) {
	srv := startRedisServer(t)
	errs := &failoverErrors{}
	f, _ := newFailoverOn(t, srv.addr(), "failover", errs.record)

	T := 3 * time.Second
	id := NewIdentity("bot", false, netip.MustParseAddr("192.0.2.9"))
	now := time.Now()
	if r, err := f.Throttle(ctx0, id, T, now); err != nil || !r.Allowed {
		t.Fatalf("healthy: %+v %v", r, err)
	}
	if errs.n.Load() != 0 {
		t.Fatalf("errors while healthy: %v", *errs.last.Load())
	}

	srv.stop() // outage
	// The local store is warm: it saw the allowed request, so an immediate
	// second one is refused from memory.
	r, err := f.Throttle(ctx0, id, T, now)
	if err != nil || r.Allowed {
		t.Fatalf("outage, warm identity: %+v %v, want refused from local state", r, err)
	}
	fresh := NewIdentity("bot", false, netip.MustParseAddr("192.0.2.10"))
	begin := time.Now()
	for i := range 50 {
		r, err := f.Throttle(ctx0, fresh, T, now.Add(time.Duration(i)*T))
		if err != nil || !r.Allowed {
			t.Fatalf("outage: %+v %v, want fail open", r, err)
		}
		if _, err := f.Banned(ctx0, fresh, now); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(begin); el > 5*time.Second {
		t.Fatalf("100 decisions during the outage took %v", el)
	}
	p := StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}
	f.Strike(ctx0, fresh, p, now, testInfo(fresh))
	if b, err := f.Strike(ctx0, fresh, p, now, testInfo(fresh)); err != nil || !b.Banned {
		t.Fatalf("strikes during the outage are not enforced locally: %+v %v", b, err)
	}
	n := errs.n.Load()
	if n < 100 {
		t.Fatalf("onError called %d times for 104 local decisions", n)
	}
	if errs.unavailable.Load() == 0 || errs.unavailable.Load() == n {
		t.Fatalf("of %d errors %d wrap ErrUnavailable: want the first failures reported as themselves, then backoff", n, errs.unavailable.Load())
	}
	t.Logf("outage: %d errors reported (%d while backing off), last: %v", n, errs.unavailable.Load(), *errs.last.Load())

	checkFailoverRecovery(t, srv, f, errs)
}

// checkFailoverRecovery restarts srv after the outage of
// TestFailoverOutageAndRecovery (same port, empty Redis) and checks that
// f's decisions come from Redis again and report no more errors.
func checkFailoverRecovery(t *testing.T, srv *redisServer, f *Failover, errs *failoverErrors) {
	t.Helper()
	// Spend budget directly in Redis for an identity the local store has
	// never seen; once the failover refuses it, decisions come from Redis
	// again.
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	direct := newRedisStore(t, srv.addr(), "failover")
	probe := NewIdentity("bot", false, netip.MustParseAddr("192.0.2.11"))
	if r := mustThrottle(t, direct, probe, time.Hour, time.Now()); !r.Allowed {
		t.Fatal("direct spend refused")
	}
	deadline := time.Now().Add(15 * time.Second)
	for { // wait until a call reports no error: the primary answered
		before := errs.n.Load()
		if _, err := f.Banned(ctx0, probe, time.Now()); err != nil {
			t.Fatal(err)
		}
		if errs.n.Load() == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failover did not return to Redis after restart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := errs.n.Load()
	if r, err := f.Throttle(ctx0, probe, time.Hour, time.Now()); err != nil || r.Allowed {
		t.Fatalf("after recovery: %+v %v, want refused by Redis's state (local has none)", r, err)
	}
	for range 20 {
		if _, err := f.Banned(ctx0, probe, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if errs.n.Load() != before {
		t.Fatalf("errors still reported after recovery: %v", *errs.last.Load())
	}
}

// TestRedisThrottleLatency: a throttle decision costs one round trip to
// Redis (one command, counted by a client hook), and its median latency is
// within a few PING round trips measured beside it, call for call, so that
// the machine's load weighs on both alike. BenchmarkRedisThrottle gives the
// figures (p50, p99).
func TestRedisThrottleLatency(t *testing.T) {
	addr := sharedRedis(t)
	opts, _ := ParseRedisURL("redis://" + addr)
	c := redis.NewUniversalClient(opts)
	var cmds commandCounter
	c.AddHook(&cmds)
	s, err := NewRedis(RedisConfig{Client: c, Site: freshSite("latency"), CloseClient: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	throttle := func(i int) time.Duration {
		id := NewIdentity("bot", false, ip4(uint32(i%500)))
		begin := time.Now()
		if _, err := s.Throttle(ctx0, id, time.Second, begin); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		return time.Since(begin)
	}
	for i := range 100 { // warm-up: connections, script load
		throttle(i)
	}
	const n = 2000
	before := cmds.n.Load()
	var lat, ping []time.Duration
	for i := range n {
		begin := time.Now()
		if err := c.Ping(ctx0).Err(); err != nil {
			t.Fatal(err)
		}
		ping = append(ping, time.Since(begin))
		lat = append(lat, throttle(i))
	}
	if sent := cmds.n.Load() - before; sent != 2*n {
		t.Fatalf("%d throttle decisions and %d PINGs sent %d commands: a decision is not one round trip", n, n, sent)
	}
	slices.Sort(lat)
	slices.Sort(ping)
	p50, p99, pingP50 := lat[n/2], lat[n*99/100], ping[n/2]
	t.Logf("redis Throttle on loopback, %d calls: p50 %v, p99 %v, max %v; PING p50 %v", n, p50, p99, lat[n-1], pingP50)
	if limit := 4*pingP50 + time.Millisecond; p50 > limit {
		t.Errorf("Throttle p50 %v, PING p50 %v: a decision costs more than a few round trips (limit %v)", p50, pingP50, limit)
	}
}

// commandCounter is a go-redis hook that counts the commands sent.
type commandCounter struct{ n atomic.Int64 }

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func BenchmarkRedisThrottle(b *testing.B) {
	addr := sharedRedis(b)
	opts, _ := ParseRedisURL("redis://" + addr)
	c := redis.NewUniversalClient(opts)
	s, err := NewRedis(RedisConfig{Client: c, Site: freshSite("bench"), CloseClient: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := make([]Identity, 500)
	for i := range ids {
		ids[i] = NewIdentity("bot", false, ip4(uint32(i)))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		begin := time.Now()
		if _, err := s.Throttle(ctx0, ids[i%len(ids)], time.Second, begin); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(begin))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// TestFailoverPingEndsBackoff: after an outage, a successful Ping (the
// status page's check) returns decisions to Redis at once, where they would
// otherwise stay local until a call outlasts the backoff.
func TestFailoverPingEndsBackoff(t *testing.T) {
	srv := startRedisServer(t)
	f, _ := newFailoverOn(t, srv.addr(), "ping-ends-backoff", nil)
	id := NewIdentity("bot", false, netip.MustParseAddr("192.0.2.12"))
	srv.stop()
	if _, err := f.Banned(ctx0, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !f.DecidingLocally() {
		t.Fatal("not deciding locally after the primary failed")
	}
	if err := f.Ping(ctx0); err == nil {
		t.Fatal("Ping answered with the server stopped")
	}
	if !f.DecidingLocally() {
		t.Fatal("a failed Ping ended the backoff")
	}
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { return f.Ping(ctx0) == nil }) {
		t.Fatal("Ping does not answer after the restart")
	}
	if f.DecidingLocally() {
		t.Error("still deciding locally after a successful Ping")
	}
}
