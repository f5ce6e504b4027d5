package state

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// banInfoStores are the stores whose ban info is checked: memory on
// virtual time, Redis on real time (its windows and bans run on its own
// clock).
func banInfoStores() map[string]func(t *testing.T) (Store, bool) {
	return map[string]func(t *testing.T) (Store, bool){
		"memory": func(*testing.T) (Store, bool) { return NewMemory(MemoryConfig{}), false },
		"redis": func(t *testing.T) (Store, bool) {
			return newRedisStore(t, sharedRedis(t), freshSite("baninfo")), true
		},
	}
}

// TestBanInfo: a ban says who earned it and why: the last strike's crawler,
// token and scope, the window's last MaxStrikeRecords strikes oldest
// first, and when it started; Banned, a strike during the ban and Bans all
// return it.
func TestBanInfo(t *testing.T) {
	for name, open := range banInfoStores() {
		t.Run(name, func(t *testing.T) {
			s, real := open(t)
			c := newPaceClock(real)
			id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.44"))
			id.Site = "example.com"
			p := StrikePolicy{Strikes: 6, Window: time.Hour, Ban: time.Hour}
			var r BanResult
			var ats []time.Time
			for i := 1; i <= 6; i++ {
				info := StrikeInfo{Crawler: fmt.Sprint("Grabber", i%2), Token: "*", Line: 10 + i, Version: fmt.Sprint("v", i/4), Scope: "example.com on :443"}
				now := c.at(time.Duration(i) * 10 * time.Millisecond)
				ats = append(ats, now)
				var err error
				if r, err = s.Strike(ctx0, id, p, now, info); err != nil {
					t.Fatal(err)
				}
				if i < 6 && (r.Banned || !r.Info.IsZero()) {
					t.Fatalf("strike %d: %+v, want no ban and no info", i, r)
				}
			}
			if !r.Banned || r.Strikes != 6 {
				t.Fatalf("sixth strike: %+v, want a ban", r)
			}
			want := BanInfo{Crawler: "Grabber0", Token: "*", Scope: "example.com on :443", Since: ats[5]}
			for i := 3; i <= 6; i++ {
				want.Strikes = append(want.Strikes, StrikeRecord{Line: 10 + i, Version: fmt.Sprint("v", i/4), At: ats[i-1]})
			}
			prec := time.Duration(0)
			if real {
				prec = time.Millisecond
			}
			checkInfo(t, "the banning strike", r.Info, want, prec)
			b, err := s.Banned(ctx0, id, ats[5])
			if err != nil || !b.Banned {
				t.Fatalf("Banned: %+v %v", b, err)
			}
			checkInfo(t, "Banned", b.Info, want, prec)
			during, err := s.Strike(ctx0, id, p, ats[5], StrikeInfo{Crawler: "Other", Line: 99})
			if err != nil || !during.Banned {
				t.Fatalf("strike during the ban: %+v %v", during, err)
			}
			checkInfo(t, "a strike during the ban", during.Info, want, prec)
			bans, err := s.(BanLister).Bans(ctx0, ats[5], 0)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, ban := range bans {
				if ban.Key == id.String() {
					found = true
					checkInfo(t, "Bans", ban.Info, want, prec)
				}
			}
			if !found {
				t.Fatalf("Bans %v does not list %s", bans, id)
			}
		})
	}
}

// checkInfo compares ban info, times to within prec.
func checkInfo(t *testing.T, what string, got, want BanInfo, prec time.Duration) {
	t.Helper()
	near := func(a, b time.Time) bool { return a.Sub(b).Abs() <= prec }
	bad := got.Crawler != want.Crawler || got.Token != want.Token || got.Scope != want.Scope ||
		!near(got.Since, want.Since) || len(got.Strikes) != len(want.Strikes)
	for i := range want.Strikes {
		if bad {
			break
		}
		g, w := got.Strikes[i], want.Strikes[i]
		bad = g.Line != w.Line || g.Version != w.Version || !near(g.At, w.At)
	}
	if bad {
		t.Errorf("%s: info %+v, want %+v", what, got, want)
	}
}

// TestBanInfoWindow: a window that ended takes its strike records with it;
// a ban that ended does too.
func TestBanInfoWindow(t *testing.T) {
	for name, open := range banInfoStores() {
		t.Run(name, func(t *testing.T) {
			s, real := open(t)
			c := newPaceClock(real)
			W := time.Minute
			if real {
				W = 300 * time.Millisecond
			}
			p := StrikePolicy{Strikes: 3, Window: W, Ban: W}
			id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.45"))
			strike := func(off time.Duration, line int) BanResult {
				t.Helper()
				r, err := s.Strike(ctx0, id, p, c.at(off), StrikeInfo{Crawler: "X", Line: line})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			strike(0, 1)
			strike(W/10, 2)
			// The window ends: lines 1 and 2 are forgotten.
			strike(W+W/5, 3)
			strike(W+W/4, 4)
			r := strike(W+W/3, 5)
			if !r.Banned || len(r.Info.Strikes) != 3 || r.Info.Strikes[0].Line != 3 || r.Info.Strikes[2].Line != 5 {
				t.Fatalf("ban after a new window: %+v, want strikes of lines 3, 4, 5", r)
			}
			// The ban ends: the next ban lists only the strikes after it.
			strike(3*W, 6)
			strike(3*W+W/10, 7)
			r = strike(3*W+W/5, 8)
			if !r.Banned || len(r.Info.Strikes) != 3 || r.Info.Strikes[0].Line != 6 {
				t.Fatalf("ban after a ban: %+v, want strikes of lines 6, 7, 8", r)
			}
		})
	}
}

// TestBanInfoClipped: long strings are cut to MaxNameLen bytes at a
// character boundary, in both stores.
func TestBanInfoClipped(t *testing.T) {
	for name, open := range banInfoStores() {
		t.Run(name, func(t *testing.T) {
			s, _ := open(t)
			long := strings.Repeat("é", 1000) // 2 bytes each: 64 is a boundary, so start off by one
			info := StrikeInfo{Crawler: "x" + long, Token: long, Version: "v" + long, Scope: "s" + long, Line: 3}
			id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.46"))
			r, err := s.Strike(ctx0, id, StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Minute}, time.Now(), info)
			if err != nil || !r.Banned || len(r.Info.Strikes) != 1 {
				t.Fatalf("strike: %+v %v", r, err)
			}
			for what, v := range map[string]string{"crawler": r.Info.Crawler, "token": r.Info.Token, "scope": r.Info.Scope, "version": r.Info.Strikes[0].Version} {
				if len(v) > MaxNameLen || len(v) < MaxNameLen-3 || !utf8.ValidString(v) {
					t.Errorf("%s kept as %d bytes (valid UTF-8: %v), want up to %d at a character boundary", what, len(v), utf8.ValidString(v), MaxNameLen)
				}
			}
		})
	}
}

// TestRedisOldBanValue: a ban key written before bans carried their info
// ("1") is still a ban, with empty info, for Banned, Strike and Bans.
func TestRedisOldBanValue(t *testing.T) {
	addr := sharedRedis(t)
	s := newRedisStore(t, addr, freshSite("oldban"))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.47"))
	if err := c.Set(ctx0, s.key(id)+":ban", "1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if r, err := s.Banned(ctx0, id, now); err != nil || !r.Banned || !r.Info.IsZero() {
		t.Fatalf("Banned on an old ban key: %+v %v", r, err)
	}
	if r, err := s.Strike(ctx0, id, DefaultStrikePolicy(), now, testInfo(id)); err != nil || !r.Banned || !r.Info.IsZero() {
		t.Fatalf("Strike on an old ban key: %+v %v", r, err)
	}
	bans, err := s.Bans(ctx0, now, 0)
	if err != nil || len(bans) != 1 || bans[0].Key != id.String() || !bans[0].Info.IsZero() {
		t.Fatalf("Bans with an old ban key: %+v %v", bans, err)
	}
	// Garbage is a ban without info too, never an error.
	if err := c.Set(ctx0, s.key(id)+":ban", "{not json", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Banned(ctx0, id, now); err != nil || !r.Banned || !r.Info.IsZero() {
		t.Fatalf("Banned on a garbled ban key: %+v %v", r, err)
	}
}

// TestRedisStrikeLogKey: the strike log holds at most MaxStrikeRecords
// records and expires with the strike counter; a ban removes both.
func TestRedisStrikeLogKey(t *testing.T) {
	addr := sharedRedis(t)
	s := newRedisStore(t, addr, freshSite("strikelog"))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	id := NewIdentity("*", false, netip.MustParseAddr("192.0.2.48"))
	p := StrikePolicy{Strikes: 10, Window: time.Minute, Ban: time.Hour}
	now := time.Now()
	for i := range 7 {
		if _, err := s.Strike(ctx0, id, p, now, StrikeInfo{Line: i}); err != nil {
			t.Fatal(err)
		}
	}
	stem := s.key(id)
	if n, err := c.LLen(ctx0, stem+":strikelog").Result(); err != nil || n != MaxStrikeRecords {
		t.Fatalf("strike log holds %d records (%v), want %d", n, err, MaxStrikeRecords)
	}
	lt, _ := c.PTTL(ctx0, stem+":strikelog").Result()
	ct, _ := c.PTTL(ctx0, stem+":strikes").Result()
	if lt <= 0 || (lt-ct).Abs() > 50*time.Millisecond {
		t.Fatalf("strike log TTL %v, counter TTL %v: want equal", lt, ct)
	}
	for range 3 {
		if _, err := s.Strike(ctx0, id, p, now, StrikeInfo{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := c.Exists(ctx0, stem+":strikelog", stem+":strikes").Result(); n != 0 {
		t.Fatalf("%d of the strike log and counter kept after the ban", n)
	}
}

// TestBanInfoJSON: what Redis keeps reads back as it was.
func TestBanInfoJSON(t *testing.T) {
	since := time.UnixMilli(1_700_000_000_123)
	b := BanInfo{Crawler: `Gr"ab</ber>`, Token: "*", Scope: "é on :443", Since: since,
		Strikes: []StrikeRecord{{Line: 3, Version: "v1", At: since.Add(-time.Second)}, {Version: "v2", At: since}}}
	got := parseBanValue(banValueJSON(b))
	checkInfo(t, "round trip", got, b, 0)
	head := banHeadJSON(StrikeInfo{Crawler: b.Crawler, Token: b.Token, Scope: b.Scope}, since)
	v := head + strikeRecordJSON(StrikeInfo{Line: 3, Version: "v1"}, since.Add(-time.Second)) + "," +
		strikeRecordJSON(StrikeInfo{Version: "v2"}, since) + "]}"
	checkInfo(t, "as the strike script builds it", parseBanValue(v), b, 0)
	for _, old := range []string{"1", "", "{", "[]"} {
		if !parseBanValue(old).IsZero() {
			t.Errorf("parseBanValue(%q) is not empty", old)
		}
	}
}
