package state

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseIdentityRoundTrip(t *testing.T) {
	for _, id := range []Identity{
		NewIdentity("GPTBot", false, netip.MustParseAddr("203.0.113.7")),
		NewIdentity("Googlebot", true, netip.MustParseAddr("66.249.66.1")),
		NewIdentity("*", false, netip.MustParseAddr("2001:db8::1")),
		{Site: "example.com", Name: "Googlebot", Verified: true, Prefix: netip.MustParsePrefix("66.249.66.0/24")},
		{Site: "log|a%b@c{d}", Name: "we|ird@na me%", Prefix: netip.MustParsePrefix("192.0.2.1/32")},
		{Name: "bare"},
	} {
		key := id.String()
		got, err := ParseIdentity(key)
		if err != nil {
			t.Errorf("ParseIdentity(%q): %v", key, err)
			continue
		}
		if got != id {
			t.Errorf("ParseIdentity(%q) = %+v, want %+v", key, got, id)
		}
	}
	for _, bad := range []string{"", "x:abc", "u:name@not-a-prefix", "u:bad%zzescape", "u:cut%4"} {
		if _, err := ParseIdentity(bad); err == nil {
			t.Errorf("ParseIdentity(%q) succeeded, want an error", bad)
		}
	}
}

// banSome strikes id under p until it is banned.
func banSome(t *testing.T, s Store, id Identity, p StrikePolicy, now time.Time) BanResult {
	t.Helper()
	return banAs(t, s, id, p, now, testInfo(id))
}

// banAs strikes id under p with info until it is banned.
func banAs(t *testing.T, s Store, id Identity, p StrikePolicy, now time.Time, info StrikeInfo) BanResult {
	t.Helper()
	var r BanResult
	for range p.Strikes {
		var err error
		if r, err = s.Strike(context.Background(), id, p, now, info); err != nil {
			t.Fatalf("strike: %v", err)
		}
	}
	if !r.Banned {
		t.Fatalf("%s not banned after %d strikes", id, p.Strikes)
	}
	return r
}

// checkBanLister bans two identities, lists them, lifts one and checks
// that it is free again with no strikes left.
func checkBanLister(t *testing.T, s Store, site string) {
	t.Helper()
	ctx := context.Background()
	l := s.(BanLister)
	now := time.Now()
	p := StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}
	a := NewIdentity("*", false, netip.MustParseAddr("198.51.100.7"))
	a.Site = site
	b := Identity{Site: site, Name: "Googlebot", Verified: true, Prefix: netip.MustParsePrefix("66.249.66.0/24")}
	other := NewIdentity("*", false, netip.MustParseAddr("198.51.100.8"))
	other.Site = site
	banSome(t, s, a, p, now)
	banSome(t, s, b, p, now)
	if _, err := s.Strike(ctx, other, p, now, testInfo(other)); err != nil { // one strike: not banned
		t.Fatal(err)
	}

	bans, err := l.Bans(ctx, now, 0)
	if err != nil {
		t.Fatalf("Bans: %v", err)
	}
	found := map[string]Ban{}
	for _, ban := range bans {
		if ban.Identity.Site == site {
			found[ban.Key] = ban
		}
	}
	if len(found) != 2 {
		t.Fatalf("Bans listed %v for site %s, want %s and %s", bans, site, a, b)
	}
	for _, id := range []Identity{a, b} {
		ban, ok := found[id.String()]
		if !ok {
			t.Fatalf("ban of %s not listed: %v", id, bans)
		}
		if ban.Identity != id {
			t.Errorf("listed identity %+v, want %+v", ban.Identity, id)
		}
		if d := ban.Until.Sub(now); d < 59*time.Minute || d > time.Hour+time.Second {
			t.Errorf("ban of %s ends in %s, want about 1h", id, d)
		}
	}
	if got, err := l.Bans(ctx, now, 1); err != nil || len(got) != 1 {
		t.Errorf("Bans(limit 1) = %d bans, %v; want 1", len(got), err)
	}

	ok, err := l.Unban(ctx, a.String(), now)
	if err != nil || !ok {
		t.Fatalf("Unban(%s) = %v, %v; want true", a, ok, err)
	}
	if r, err := s.Banned(ctx, a, now); err != nil || r.Banned || r.Strikes != 0 {
		t.Errorf("after Unban: Banned = %+v, %v; want free with no strikes", r, err)
	}
	if r, _ := s.Banned(ctx, b, now); !r.Banned {
		t.Errorf("Unban of %s also lifted %s", a, b)
	}
	if ok, err := l.Unban(ctx, a.String(), now); err != nil || ok {
		t.Errorf("second Unban = %v, %v; want false", ok, err)
	}
	if ok, err := l.Unban(ctx, other.String(), now); err != nil || ok {
		t.Errorf("Unban of an identity with strikes but no ban = %v, %v; want false", ok, err)
	}
	if _, err := l.Unban(ctx, "not a key", now); err == nil {
		t.Error("Unban of a malformed key succeeded")
	}
	// The lifted identity starts again from zero strikes.
	if r, _ := s.Strike(ctx, a, p, now, testInfo(a)); r.Banned || r.Strikes != 1 {
		t.Errorf("first strike after Unban = %+v, want 1 strike, no ban", r)
	}
	checkUnbanWhere(t, s, site, b)
}

// checkUnbanWhere bans four more identities of site and lifts them by
// crawler, by network, then all of site's bans (left: still, which is
// banned already).
func checkUnbanWhere(t *testing.T, s Store, site string, still Identity) {
	t.Helper()
	ctx := context.Background()
	l := s.(BanLister)
	now := time.Now()
	p := StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}
	ids := map[string]Identity{}
	for _, c := range []struct{ addr, crawler string }{
		{"198.51.100.20", "Grabber"}, {"2001:db8:5::1", "Grabber"}, {"203.0.113.9", "Other"}, {"203.0.113.10", "Other"},
	} {
		id := NewIdentity("*", false, netip.MustParseAddr(c.addr))
		id.Site = site
		ids[c.addr] = id
		banAs(t, s, id, p, now, StrikeInfo{Crawler: c.crawler, Token: "*", Line: 4, Version: "v9", Scope: site})
	}
	mine := func(b Ban) bool { return b.Identity.Site == site }
	keysOf := func(bans []Ban) []string {
		var ks []string
		for _, b := range bans {
			ks = append(ks, b.Key)
		}
		return ks
	}
	want := func(addrs ...string) []string {
		var ks []string
		for _, a := range addrs {
			ks = append(ks, ids[a].String())
		}
		slices.Sort(ks)
		return ks
	}
	lifted, err := l.UnbanWhere(ctx, func(b Ban) bool { return mine(b) && b.Info.Crawler == "Grabber" }, now)
	if got, w := keysOf(lifted), want("198.51.100.20", "2001:db8:5::1"); err != nil || !slices.Equal(got, w) {
		t.Fatalf("UnbanWhere(crawler Grabber) lifted %v, %v; want %v", got, err, w)
	}
	for _, b := range lifted {
		if b.Info.Crawler != "Grabber" || len(b.Info.Strikes) != 2 || b.Info.Strikes[1].Line != 4 {
			t.Errorf("lifted ban %s carries info %+v", b.Key, b.Info)
		}
	}
	if r, _ := s.Banned(ctx, ids["198.51.100.20"], now); r.Banned || r.Strikes != 0 {
		t.Errorf("after UnbanWhere: %+v, want free with no strikes", r)
	}
	if r, _ := s.Banned(ctx, ids["203.0.113.9"], now); !r.Banned {
		t.Error("UnbanWhere(crawler Grabber) lifted another crawler's ban")
	}
	net := netip.MustParsePrefix("203.0.113.0/24")
	lifted, err = l.UnbanWhere(ctx, func(b Ban) bool { return mine(b) && b.Identity.Prefix.Overlaps(net) }, now)
	if got, w := keysOf(lifted), want("203.0.113.9", "203.0.113.10"); err != nil || !slices.Equal(got, w) {
		t.Fatalf("UnbanWhere(network %s) lifted %v, %v; want %v", net, got, err, w)
	}
	lifted, err = l.UnbanWhere(ctx, mine, now)
	if got, w := keysOf(lifted), []string{still.String()}; err != nil || !slices.Equal(got, w) {
		t.Fatalf("UnbanWhere(all) lifted %v, %v; want %v", got, err, w)
	}
	bans, err := l.Bans(ctx, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bans {
		if mine(b) {
			t.Errorf("ban %s listed after all were lifted", b.Key)
		}
	}
	if lifted, err := l.UnbanWhere(ctx, mine, now); err != nil || len(lifted) != 0 {
		t.Errorf("UnbanWhere with nothing to lift: %v, %v", keysOf(lifted), err)
	}
}

func TestMemoryBans(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	if bans, err := m.Bans(context.Background(), time.Now(), 0); err != nil || len(bans) != 0 {
		t.Fatalf("empty store lists %v, %v", bans, err)
	}
	checkBanLister(t, m, "mem.example")
	// A ban that has ended is not listed.
	later := time.Now().Add(2 * time.Hour)
	if bans, _ := m.Bans(context.Background(), later, 0); len(bans) != 0 {
		t.Errorf("expired bans listed: %v", bans)
	}
}

func TestRedisBans(t *testing.T) {
	addr := sharedRedis(t)
	checkBanLister(t, newRedisStore(t, addr, freshSite("bans-site")), "redis.example")
	// A prefix with glob characters lists only its own keys. Both are on
	// one site of their own, so that a second run starts with no ban.
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	site := freshSite("glob")
	star, err := NewRedis(RedisConfig{Client: c, Prefix: "p*[x]", Site: site, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewRedis(RedisConfig{Client: c, Prefix: "pz[x]", Site: site, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.9"))
	banSome(t, plain, id, StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Minute}, time.Now())
	if bans, err := star.Bans(context.Background(), time.Now(), 0); err != nil || len(bans) != 0 {
		t.Errorf("prefix p*[x] lists %v, %v; want none (the ban is under pz[x])", bans, err)
	}
	if bans, err := plain.Bans(context.Background(), time.Now(), 0); err != nil || len(bans) != 1 {
		t.Errorf("prefix pz[x] lists %v, %v; want its ban", bans, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := star.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func TestFailoverBans(t *testing.T) {
	addr := sharedRedis(t)
	remote := newRedisStore(t, addr, freshSite("failover-bans"))
	local := NewMemory(MemoryConfig{})
	f := NewFailover(remote, local, nil)
	checkBanLister(t, f, "failover.example")
	// The local store learnt the bans too; Unban cleared it there as well.
	ctx := context.Background()
	now := time.Now()
	id := NewIdentity("*", false, netip.MustParseAddr("203.0.113.50"))
	id.Site = "failover.example"
	banSome(t, f, id, StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}, now)
	if r, _ := local.Banned(ctx, id, now); !r.Banned {
		t.Fatal("the local store did not learn the ban")
	}
	if ok, err := f.Unban(ctx, id.String(), now); !ok || err != nil {
		t.Fatalf("Unban = %v, %v", ok, err)
	}
	if r, _ := local.Banned(ctx, id, now); r.Banned {
		t.Error("the local store still bans after Unban")
	}
	if r, _ := remote.Banned(ctx, id, now); r.Banned {
		t.Error("Redis still bans after Unban")
	}
	if err := f.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if f.DecidingLocally() {
		t.Error("DecidingLocally with a healthy primary")
	}
}

func TestFailoverBansPrimaryDown(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	remote, err := NewRedis(RedisConfig{Client: c, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	local := NewMemory(MemoryConfig{})
	f := NewFailover(remote, local, nil)
	ctx := context.Background()
	now := time.Now()
	id := NewIdentity("*", false, netip.MustParseAddr("203.0.113.60"))
	banSome(t, local, id, StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}, now)
	bans, err := f.Bans(ctx, now, 0)
	if err == nil || !strings.Contains(err.Error(), "listing bans") {
		t.Errorf("Bans with the primary down: err %v, want the primary's error", err)
	}
	if len(bans) != 1 || bans[0].Key != id.String() {
		t.Errorf("Bans with the primary down = %v, want the local ban", bans)
	}
	ok, err := f.Unban(ctx, id.String(), now)
	if !ok || err == nil {
		t.Errorf("Unban with the primary down = %v, %v; want true and the primary's error", ok, err)
	}
	if r, _ := local.Banned(ctx, id, now); r.Banned {
		t.Error("the local ban survived Unban")
	}
	pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := f.Ping(pctx); err == nil {
		t.Error("Ping of a dead primary succeeded")
	}
}
