package state

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// newFailoverOn returns a Failover on its own client to the Redis at addr
// (a new "instance") and its local store.
func newFailoverOn(t *testing.T, addr, site string, onError func(error)) (*Failover, *Memory) {
	t.Helper()
	opts, err := ParseRedisURL("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	primary, err := NewRedis(RedisConfig{Client: redis.NewUniversalClient(opts), Site: site, CloseClient: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	local := NewMemory(MemoryConfig{})
	f := NewFailover(primary, local, onError)
	t.Cleanup(func() { _ = f.Close() })
	return f, local
}

// siteSeq numbers the sites of freshSite.
var siteSeq atomic.Int64

// freshSite returns a site name no other test run used on the shared
// redis-server, so that tests run with -count > 1 start from no state.
func freshSite(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), siteSeq.Add(1))
}

// waitFor polls cond every 20ms until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailoverKeepsBansEarnedDuringOutage: Redis dies; bans earned from
// local strikes are enforced, with their info, and listed with an error;
// crawlers seen for the first time are judged on their own identity. Redis
// comes back empty: the bans stay in force, and are written to Redis with
// their info and remaining time, by an instance that keeps serving and by
// one that gets no request at all.
func TestFailoverKeepsBansEarnedDuringOutage(t *testing.T) {
	srv := startRedisServer(t)
	const site = "outage-bans"
	var reported atomic.Int64
	f, local := newFailoverOn(t, srv.addr(), site, func(error) { reported.Add(1) })
	quiet, _ := newFailoverOn(t, srv.addr(), site, nil) // gets no request after the outage
	p := StrikePolicy{Strikes: 3, Window: time.Minute, Ban: time.Hour}
	bad := NewIdentity("*", false, netip.MustParseAddr("198.51.100.66"))
	bad.Site = "example.com"
	other := NewIdentity("*", false, netip.MustParseAddr("198.51.100.67"))
	other.Site = "example.com"
	info := func(line int) StrikeInfo {
		return StrikeInfo{Crawler: "ContentGrabber", Token: "*", Line: line, Version: "v7", Scope: "example.com on :443"}
	}
	start := time.Now()
	if r, err := f.Banned(ctx0, bad, start); err != nil || r.Banned {
		t.Fatalf("healthy: %+v %v", r, err)
	}
	// A strike counted by Redis before the outage does not count locally
	// as earned; the local store counts it too (warm).
	if r, err := f.Strike(ctx0, bad, p, start, info(3)); err != nil || r.Banned {
		t.Fatalf("healthy strike: %+v %v", r, err)
	}

	srv.stop() // outage
	now := time.Now()
	var ban BanResult
	for i := 4; i <= 5; i++ {
		var err error
		if ban, err = f.Strike(ctx0, bad, p, now, info(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !ban.Banned || ban.Info.Crawler != "ContentGrabber" || len(ban.Info.Strikes) != 3 || ban.Info.Strikes[2].Line != 5 {
		t.Fatalf("third strike during the outage: %+v, want a ban with its info (lines 3, 4, 5)", ban)
	}
	for i := 0; i < 3; i++ {
		if _, err := quiet.Strike(ctx0, other, p, now, info(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := f.Banned(ctx0, bad, now); err != nil || !r.Banned || r.Info.Crawler != "ContentGrabber" {
		t.Fatalf("Banned during the outage: %+v %v", r, err)
	}
	requireFreshNotBanned(t, f, bad, other, now)
	bans, err := f.Bans(ctx0, now, 0)
	if err == nil || len(bans) != 1 || bans[0].Key != bad.String() || bans[0].Info.Crawler != "ContentGrabber" {
		t.Fatalf("Bans during the outage: %v, %v; want the local ban and an error", bans, err)
	}

	if err := srv.start(); err != nil { // back, empty
		t.Fatal(err)
	}
	direct := newRedisStore(t, srv.addr(), site)
	// The instance serving requests: its ban stays in force throughout,
	// and is written.
	written := waitFor(10*time.Second, func() bool {
		if r, err := f.Banned(ctx0, bad, time.Now()); err != nil || !r.Banned {
			t.Fatalf("after Redis came back: %+v %v; want still banned", r, err)
		}
		r, err := direct.Banned(ctx0, bad, time.Now())
		return err == nil && r.Banned
	})
	if !written {
		t.Fatal("the ban earned during the outage was not written to Redis within 10s")
	}
	t.Logf("ban written to Redis %v after the restart", time.Since(now))
	r, err := direct.Banned(ctx0, bad, time.Now())
	if err != nil || r.Info.Crawler != "ContentGrabber" || r.Info.Token != "*" || r.Info.Scope != "example.com on :443" ||
		len(r.Info.Strikes) != 3 || r.Info.Strikes[0].Line != 3 || r.Info.Strikes[2].Version != "v7" ||
		r.Info.Since.Sub(ban.Info.Since).Abs() > time.Millisecond {
		t.Fatalf("ban in Redis: %+v %v; want the local ban's info", r, err)
	}
	if d := r.Until.Sub(ban.Until).Abs(); d > time.Second {
		t.Fatalf("ban in Redis ends at %v, %v from the local ban's end", r.Until, d)
	}
	// The writer marks the ban written (settle) just after Redis has it:
	// wait for that step, not for a lucky schedule.
	var left []earnedBan
	if !waitFor(10*time.Second, func() bool {
		left = local.earnedBans(time.Now(), 0)
		return len(left) == 0
	}) {
		t.Fatalf("bans still held locally 10s after the write: %v", left)
	}
	if r, err := f.Banned(ctx0, bad, time.Now()); err != nil || !r.Banned || r.Info.Crawler != "ContentGrabber" {
		t.Fatalf("Banned after the write: %+v %v", r, err)
	}
	// The quiet instance's writer retried on its own.
	if !waitFor(10*time.Second, func() bool {
		r, err := direct.Banned(ctx0, other, time.Now())
		return err == nil && r.Banned && r.Info.Strikes[0].Line == 10
	}) {
		t.Fatal("the quiet instance's ban was not written to Redis within 10s")
	}
	if bans, err := f.Bans(ctx0, time.Now(), 0); err != nil || len(bans) != 2 {
		t.Fatalf("Bans after recovery: %v, %v; want both bans from Redis", bans, err)
	}
	t.Logf("%d errors reported", reported.Load())
}

// requireFreshNotBanned: during the outage, clients f never saw are judged
// on their own identity, not by bad's ban: a neighbour (other), an IPv6
// client, a verified crawler of the banned crawler's name, the banned
// address on another site, and many crawlers never seen before.
func requireFreshNotBanned(t *testing.T, f *Failover, bad, other Identity, now time.Time) {
	t.Helper()
	fresh := []Identity{other, NewIdentity("*", false, netip.MustParseAddr("2001:db8::66")),
		{Site: "example.com", Name: "ContentGrabber", Verified: true}, {Name: "*", Prefix: bad.Prefix}}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		id := NewIdentity("*", false, ip4(rng.Uint32()))
		id.Site = "example.com"
		if id != bad {
			fresh = append(fresh, id)
		}
	}
	for _, id := range fresh {
		if r, err := f.Banned(ctx0, id, now); err != nil || r.Banned {
			t.Fatalf("%s, never seen, during the outage: %+v %v; want not banned (someone else's ban)", id, r, err)
		}
	}
}

// TestFailoverHeldBanIsNotShortenedOrResurrected: a ban written back never
// shortens a longer one in Redis; a ban earned during an outage and lifted
// before Redis came back is not written.
func TestFailoverHeldBanIsNotShortenedOrResurrected(t *testing.T) {
	srv := startRedisServer(t)
	const site = "outage-longer"
	f, _ := newFailoverOn(t, srv.addr(), site, nil)
	long := NewIdentity("*", false, netip.MustParseAddr("192.0.2.70"))
	lifted := NewIdentity("*", false, netip.MustParseAddr("192.0.2.71"))
	if _, err := f.Banned(ctx0, long, time.Now()); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	now := time.Now()
	p := StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}
	if r, _ := f.Strike(ctx0, long, p, now, StrikeInfo{Crawler: "Short"}); !r.Banned {
		t.Fatalf("not banned: %+v", r)
	}
	if r, _ := f.Strike(ctx0, lifted, p, now, StrikeInfo{Crawler: "Lifted"}); !r.Banned {
		t.Fatalf("not banned: %+v", r)
	}
	if ok, err := f.Unban(ctx0, lifted.String(), now); !ok || err == nil {
		t.Fatalf("Unban during the outage = %v, %v; want true and the primary's error", ok, err)
	}
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	direct := newRedisStore(t, srv.addr(), site)
	// Redis has a longer ban of long (another instance's), set before or
	// after the writer's: the longer one is kept either way.
	c := redis.NewClient(&redis.Options{Addr: srv.addr()})
	defer c.Close()
	if err := c.Set(ctx0, direct.key(long)+":ban", banValueJSON(BanInfo{Crawler: "Longer"}), 3*time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool {
		_, _ = f.Banned(ctx0, NewIdentity("*", false, ip4(1)), time.Now()) // traffic: the primary answers
		return len(f.keep.earnedBans(time.Now(), 0)) == 0
	}) {
		t.Fatal("the held ban was not settled within 10s")
	}
	r, err := direct.Banned(ctx0, long, time.Now())
	if err != nil || r.Info.Crawler != "Longer" || time.Until(r.Until) < 2*time.Hour {
		t.Fatalf("ban in Redis: %+v %v; want the longer ban kept", r, err)
	}
	if r, err := direct.Banned(ctx0, lifted, time.Now()); err != nil || r.Banned {
		t.Fatalf("a ban lifted during the outage was written: %+v %v", r, err)
	}
	if r, err := f.Banned(ctx0, lifted, time.Now()); err != nil || r.Banned {
		t.Fatalf("a ban lifted during the outage is enforced: %+v %v", r, err)
	}
}

// TestFailoverUnbanReachesOtherInstances: two instances share one Redis. A
// ban lifted on one (Unban, UnbanWhere) is gone from the other's Bans and
// Banned within 2s, and the other's local copy is dropped, so that a later
// outage does not bring it back.
func TestFailoverUnbanReachesOtherInstances(t *testing.T) {
	addr := sharedRedis(t)
	site := freshSite("two-instances")
	a, _ := newFailoverOn(t, addr, site, nil)
	b, bLocal := newFailoverOn(t, addr, site, nil)
	p := StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}
	ids := make([]Identity, 3)
	for i := range ids {
		ids[i] = NewIdentity("*", false, netip.MustParseAddr(fmt.Sprintf("203.0.113.%d", 80+i)))
		ids[i].Site = "example.com"
	}
	now := time.Now()
	for i, id := range ids {
		banAs(t, a, id, p, now, StrikeInfo{Crawler: fmt.Sprint("Bot", i), Token: "*", Line: 9, Version: "v1", Scope: "example.com on :443"})
		// b learns each ban from Redis, keeping a copy for outages.
		if r, err := b.Banned(ctx0, id, now); err != nil || !r.Banned || r.Info.Crawler != fmt.Sprint("Bot", i) {
			t.Fatalf("b.Banned(%s) = %+v, %v; want banned with a's info", id, r, err)
		}
		if r, _ := bLocal.Banned(ctx0, id, now); !r.Banned {
			t.Fatalf("b's local store did not learn the ban of %s", id)
		}
	}
	listed := func(s BanLister, id Identity) bool {
		bans, err := s.Bans(ctx0, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ban := range bans {
			if ban.Key == id.String() {
				return true
			}
		}
		return false
	}
	for _, id := range ids {
		if !listed(b, id) {
			t.Fatalf("b does not list %s", id)
		}
	}

	// Unban on a; b's Bans, then Banned.
	if ok, err := a.Unban(ctx0, ids[0].String(), now); !ok || err != nil {
		t.Fatalf("a.Unban = %v, %v", ok, err)
	}
	if !waitFor(2*time.Second, func() bool { return !listed(b, ids[0]) }) {
		t.Fatal("b still lists a ban lifted on a after 2s")
	}
	if r, err := b.Banned(ctx0, ids[0], time.Now()); err != nil || r.Banned {
		t.Fatalf("b.Banned after a lifted the ban: %+v %v", r, err)
	}
	// UnbanWhere on a; b's Banned first, then Bans.
	got, err := a.UnbanWhere(ctx0, func(ban Ban) bool { return ban.Info.Crawler == "Bot1" }, now)
	if err != nil || len(got) != 1 || got[0].Key != ids[1].String() {
		t.Fatalf("a.UnbanWhere(Bot1) = %v, %v", got, err)
	}
	if r, err := b.Banned(ctx0, ids[1], time.Now()); err != nil || r.Banned {
		t.Fatalf("b.Banned after a's UnbanWhere: %+v %v", r, err)
	}
	if listed(b, ids[1]) {
		t.Fatal("b lists a ban a lifted with UnbanWhere")
	}
	// b dropped its copies: the one asked about through Banned, and the
	// one only a complete listing showed gone.
	if _, err := a.Unban(ctx0, ids[2].String(), now); err != nil {
		t.Fatal(err)
	}
	if listed(b, ids[2]) {
		t.Fatal("b lists a ban a lifted")
	}
	for _, id := range ids {
		if r, _ := bLocal.Banned(ctx0, id, time.Now()); r.Banned {
			t.Errorf("b's local store keeps a copy of the lifted ban of %s: an outage would enforce it", id)
		}
	}
}

// TestFailoverBansListsHeldBansWhileHealthy: a ban held locally (earned
// during an outage, not yet written: here the primary cannot take bans) is
// listed, enforced and not counted again while the primary answers.
func TestFailoverBansListsHeldBansWhileHealthy(t *testing.T) {
	addr := sharedRedis(t)
	r := newRedisStore(t, addr, freshSite("held-healthy"))
	local := NewMemory(MemoryConfig{})
	f := NewFailover(readOnlyBans{r, r}, local, nil) // no banWriter: bans stay held
	now := time.Now()
	id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.90"))
	if got := local.strikeEarned(id, StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}, now, StrikeInfo{Crawler: "Held"}); !got.Banned {
		t.Fatalf("strikeEarned: %+v", got)
	}
	bans, err := f.Bans(ctx0, now, 0)
	if err != nil || len(bans) != 1 || bans[0].Info.Crawler != "Held" {
		t.Fatalf("Bans = %v, %v; want the held ban", bans, err)
	}
	if b, err := f.Banned(ctx0, id, now); err != nil || !b.Banned || b.Info.Crawler != "Held" {
		t.Fatalf("Banned = %+v, %v; want the held ban", b, err)
	}
	if b, err := f.Strike(ctx0, id, DefaultStrikePolicy(), now, StrikeInfo{}); err != nil || !b.Banned {
		t.Fatalf("Strike = %+v, %v; want the held ban", b, err)
	}
	if b, _ := r.Banned(ctx0, id, now); b.Strikes != 0 {
		t.Fatalf("a strike on a held ban was counted in Redis: %+v", b)
	}
	// A copy (not earned here) is neither listed nor enforced.
	cp := NewIdentity("*", false, netip.MustParseAddr("192.0.2.91"))
	local.observeBan(cp, now.Add(time.Hour), BanInfo{Crawler: "Copy"}, now)
	if bans, _ := f.Bans(ctx0, now, 0); len(bans) != 1 {
		t.Fatalf("Bans lists a copy Redis does not have: %v", bans)
	}
	if b, _ := f.Banned(ctx0, cp, now); b.Banned {
		t.Fatalf("Banned enforces a copy Redis does not have: %+v", b)
	}
}

// readOnlyBans is a primary that lists and lifts bans but cannot take
// bans earned elsewhere.
type readOnlyBans struct {
	Store
	BanLister
}

// TestRedisWriteBans: a ban written back keeps its info and remaining time,
// resets the strike count, and never shortens a longer ban.
func TestRedisWriteBans(t *testing.T) {
	addr := sharedRedis(t)
	r := newRedisStore(t, addr, freshSite("writebans"))
	now := time.Now()
	mk := func(ip string, left time.Duration, crawler string) earnedBan {
		id := NewIdentity("*", false, netip.MustParseAddr(ip))
		return earnedBan{Ban: Ban{Key: id.String(), Identity: id, Until: now.Add(left), Info: BanInfo{Crawler: crawler, Since: now,
			Strikes: []StrikeRecord{{Line: 1, Version: "v1", At: now}}}}}
	}
	fresh, shorter, longer, ended := mk("192.0.2.100", time.Hour, "Fresh"), mk("192.0.2.101", time.Hour, "Mine"), mk("192.0.2.102", time.Hour, "Mine"), mk("192.0.2.103", -time.Second, "Ended")
	if _, err := r.Strike(ctx0, fresh.Identity, StrikePolicy{Strikes: 5, Window: time.Minute, Ban: time.Hour}, now, StrikeInfo{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		e   earnedBan
		ban time.Duration
	}{{shorter, time.Minute}, {longer, 3 * time.Hour}} {
		if _, err := r.Strike(ctx0, c.e.Identity, StrikePolicy{Strikes: 1, Window: time.Minute, Ban: c.ban}, now, StrikeInfo{Crawler: "Theirs"}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := r.writeBans(ctx0, []earnedBan{fresh, shorter, longer, ended}, now)
	if err != nil || strings.Count(fmt.Sprint(done), "true") != 4 {
		t.Fatalf("writeBans = %v, %v; want all done", done, err)
	}
	check := func(e earnedBan, crawler string, left time.Duration) {
		t.Helper()
		b, err := r.Banned(ctx0, e.Identity, now)
		if err != nil || !b.Banned || b.Info.Crawler != crawler || (b.Until.Sub(now)-left).Abs() > time.Second || b.Strikes != 0 {
			t.Errorf("%s: %+v %v; want banned by %s for %v, no strikes", e.Key, b, err, crawler, left)
		}
	}
	check(fresh, "Fresh", time.Hour)
	check(shorter, "Mine", time.Hour)
	check(longer, "Theirs", 3*time.Hour)
	if b, _ := r.Banned(ctx0, ended.Identity, now); b.Banned {
		t.Errorf("an ended ban was written: %+v", b)
	}
}

// TestMemoryEarnedFlagEndsWithTheBan: once a ban earned here has ended, a
// ban learnt later for the same identity is a copy, not held.
func TestMemoryEarnedFlagEndsWithTheBan(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("*", false, ip4(77))
	if r := m.strikeEarned(id, StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Minute}, epoch, StrikeInfo{Crawler: "A"}); !r.Banned {
		t.Fatal("not banned")
	}
	if _, ok := m.heldBan(id, epoch, true); !ok {
		t.Fatal("the earned ban is not held")
	}
	later := epoch.Add(2 * time.Minute)
	m.observeBan(id, later.Add(time.Hour), BanInfo{Crawler: "B"}, later)
	if r, ok := m.heldBan(id, later, false); ok {
		t.Fatalf("a ban learnt after the earned one ended is held: %+v", r)
	}
	if r, _ := m.Banned(ctx0, id, later); !r.Banned || r.Info.Crawler != "B" {
		t.Fatalf("the learnt ban: %+v", r)
	}
	if _, ok := m.heldBan(id, later, true); ok || len(m.earnedBans(later, 0)) != 0 {
		t.Fatal("a copy is held")
	}
	if r, _ := m.Banned(ctx0, id, later); r.Banned {
		t.Fatalf("heldBan(dropCopy) kept the copy: %+v", r)
	}
}
