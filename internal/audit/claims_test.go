package audit

import (
	"bytes"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

const uaGoogle = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

// TestAuditorClaimsSplit: a fake Googlebot's refusals and ban are reported
// as the unverified claim's they are (no DNS: a Googlebot claim outside
// Google's list is unverified), with the address behind them, apart from
// the real Googlebot's verified requests; a GPTBot claim outside OpenAI's
// list is spoofed.
func TestAuditorClaimsSplit(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\n"
	p := state.StrikePolicy{Strikes: 3, Window: 10 * time.Minute, Ban: time.Hour}
	var reqs []req
	for i := range 4 {
		reqs = append(reqs, req{ts: t0 + float64(i), uri: "/", ua: uaGoogle, ip: "66.249.66.1"})
	}
	for i := range 10 {
		reqs = append(reqs, req{ts: t0 + 10 + float64(i), uri: "/private/x", ua: uaGoogle, ip: "203.0.113.9"})
	}
	reqs = append(reqs, req{ts: t0 + 25, uri: "/", ua: uaGoogle, ip: "203.0.113.10"})
	for i := range 3 {
		reqs = append(reqs, req{ts: t0 + 30 + float64(i), uri: "/", ua: uaGPTBot, ip: "203.0.113.7"})
	}
	a, _ := audit(t, Config{Strikes: &p}, robots, reqs)
	r := a.Report()
	g := crawlerReport(t, r, "Googlebot")
	want := []ClaimReport{
		{Verdict: "verified", Requests: 4},
		{Verdict: "unverified", Requests: 11, Refused: 10, Banned: 7, Bans: 1,
			RefusedBy: []AddressCount{{Addr: "203.0.113.9", Count: 10}}, BannedBy: []AddressCount{{Addr: "203.0.113.9", Count: 1}}},
	}
	if !reflect.DeepEqual(g.Claims, want) {
		t.Errorf("Googlebot's claims:\n got %+v\nwant %+v", g.Claims, want)
	}
	gpt := crawlerReport(t, r, "GPTBot")
	wantGPT := []ClaimReport{{Verdict: "spoofed", Requests: 3, Refused: 3,
		RefusedBy: []AddressCount{{Addr: "203.0.113.7", Count: 3}}}}
	if !reflect.DeepEqual(gpt.Claims, wantGPT) {
		t.Errorf("GPTBot's claims:\n got %+v\nwant %+v", gpt.Claims, wantGPT)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"Googlebot, verified claims: 4 requests, 0 refused\n",
		"Googlebot, unverified claims: 11 requests, 10 refused (7 while banned), 1 ban; bans started by 203.0.113.9 (1); refused most: 203.0.113.9 (10)\n",
		"GPTBot, spoofed claims: 3 requests, 3 refused; refused most: 203.0.113.7 (3)\n",
	} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, table.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"verdict": "unverified"`) || !strings.Contains(js.String(), `"addr": "203.0.113.9"`) {
		t.Errorf("JSON lacks the claims:\n%s", js.String())
	}
}

// TestTopAddrsBounded: the table of addresses stays at topKept entries
// however many addresses come, and still finds the heavy hitters when they
// stand out, naming only them (their counts at most Overcount above the
// truth), not the long tail whose counts are mostly others'.
func TestTopAddrsBounded(t *testing.T) {
	var top topAddrs
	heavy := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}
	for i := range 100000 {
		top.add(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1)
		if i%10 == 0 {
			top.add(heavy[0], 1)
		}
		if i%20 == 0 {
			top.add(heavy[1], 1)
		}
	}
	if len(top.slots) != topKept || !top.evicted {
		t.Fatalf("%d slots (evicted %v), want %d", len(top.slots), top.evicted, topKept)
	}
	got := top.report()
	if len(got) != 2 || got[0].Addr != "192.0.2.1" || got[1].Addr != "2001:db8::1" {
		t.Fatalf("shown: %+v", got)
	}
	for k, want := range []int64{10000, 5000} {
		if a := got[k]; a.Count < want || a.Count-a.Overcount > want {
			t.Errorf("%s: count %d (overcount %d), true count %d", a.Addr, a.Count, a.Overcount, want)
		}
	}

	// Few addresses: exact counts, at most topShown named.
	var few topAddrs
	for i := range 7 {
		few.add(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), int64(10+i))
	}
	few.add(netip.AddrFrom4([4]byte{192, 0, 2, 0}), 10)
	got = few.report()
	want := []AddressCount{{Addr: "192.0.2.0", Count: 20}, {Addr: "192.0.2.6", Count: 16}, {Addr: "192.0.2.5", Count: 15},
		{Addr: "192.0.2.4", Count: 14}, {Addr: "192.0.2.3", Count: 13}}
	if !reflect.DeepEqual(got, want) || few.evicted {
		t.Errorf("few addresses:\n got %+v\nwant %+v", got, want)
	}
}
