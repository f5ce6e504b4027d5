package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	goJA4   = "t13d1312h2_f57a46bbacb6_ab7e3b40a677"
	curlJA4 = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac"
)

func judgement(ja4, claim, ip string, enforced bool, at time.Time) TLSJudgement {
	return TLSJudgement{JA4: ja4, Engine: "library", Why: "this request's TLS handshake is an HTTP library's: signature_algorithms_cert extension (Go, Java)",
		Claim: claim, Network: netip.PrefixFrom(netip.MustParseAddr(ip), 32), Enforced: enforced, At: at}
}

// TestTLSWatchCounts: per fingerprint and mode, the requests, the claimed
// browsers (each once), the networks (each once), and first and last
// seen; the modes are kept apart; a request with and without a
// fingerprint is counted apart.
func TestTLSWatchCounts(t *testing.T) {
	var w TLSWatch
	t0 := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	for i := range 5 {
		w.Seen(true)
		w.Judged(judgement(goJA4, "Chrome", "192.0.2.1", false, t0.Add(time.Duration(i)*time.Minute)))
	}
	w.Judged(judgement(goJA4, "Firefox", "192.0.2.2", false, t0.Add(10*time.Minute)))
	w.Judged(judgement(curlJA4, "Chrome", "192.0.2.3", true, t0))
	w.Seen(false)
	w.Seen(false)

	st := w.Status()
	if st.WithFingerprint != 5 || st.WithoutFingerprint != 2 {
		t.Errorf("with %d, without %d fingerprint; want 5 and 2", st.WithFingerprint, st.WithoutFingerprint)
	}
	if len(st.Logged) != 1 || len(st.Enforced) != 1 {
		t.Fatalf("logged %+v, enforced %+v: want one each", st.Logged, st.Enforced)
	}
	c := st.Logged[0]
	if c.JA4 != goJA4 || c.Requests != 6 || c.Engine != "library" || !strings.Contains(c.Why, "Go, Java") {
		t.Errorf("logged client %+v", c)
	}
	if fmt.Sprint(c.Claimed) != "[Chrome Firefox]" || fmt.Sprint(c.Networks) != "[192.0.2.1/32 192.0.2.2/32]" || c.MoreNetworks {
		t.Errorf("claimed %v, networks %v (more %v)", c.Claimed, c.Networks, c.MoreNetworks)
	}
	if !c.First.Equal(t0) || !c.Last.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("first %v, last %v", c.First, c.Last)
	}
	if e := st.Enforced[0]; e.JA4 != curlJA4 || e.Requests != 1 {
		t.Errorf("enforced client %+v", e)
	}
}

// TestTLSWatchBounded: a flood of distinct fingerprints, each from many
// networks and with many claims, never holds more than TLSWatchMax
// fingerprints per mode, TLSWatchNetworks networks and TLSWatchClaims
// claims per fingerprint; the client that keeps coming stays listed; the
// requests of the fingerprints dropped are counted, so that none is lost.
func TestTLSWatchBounded(t *testing.T) {
	var w TLSWatch
	now := time.Now()
	for i := range 20 {
		w.Judged(judgement(goJA4, fmt.Sprintf("Browser%d", i), fmt.Sprintf("192.0.2.%d", i+1), false, now))
	}
	const flood = 10_000
	for i := range flood {
		w.Judged(judgement(fmt.Sprintf("t13d%04dh2_000000000000_000000000000", i), "Chrome", "198.51.100.1", false, now.Add(time.Duration(i))))
	}
	st := w.Status()
	if len(st.Logged) != TLSWatchMax {
		t.Fatalf("%d fingerprints held, want %d", len(st.Logged), TLSWatchMax)
	}
	top := st.Logged[0]
	if top.JA4 != goJA4 || top.Requests != 20 {
		t.Fatalf("the client that kept coming is not first: %+v", top)
	}
	if len(top.Networks) != TLSWatchNetworks || !top.MoreNetworks || len(top.Claimed) != TLSWatchClaims {
		t.Errorf("networks %v (more %v), claims %v: want %d networks and more, %d claims", top.Networks, top.MoreNetworks, top.Claimed, TLSWatchNetworks, TLSWatchClaims)
	}
	var held uint64
	for _, c := range st.Logged {
		held += c.Requests
	}
	if held+st.DroppedLogged != 20+flood {
		t.Errorf("held %d + dropped %d requests, want %d", held, st.DroppedLogged, 20+flood)
	}
}

// TestTLSWatchConcurrent: counting while the status is read (run with
// -race).
func TestTLSWatchConcurrent(t *testing.T) {
	var w TLSWatch
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				w.Seen(i%2 == 0)
				w.Judged(judgement(fmt.Sprintf("t13d%04dh2_000000000000_00000000000%d", i%100, g), "Chrome", "192.0.2.1", i%3 == 0, time.Now()))
				if i%50 == 0 {
					_ = w.Status()
				}
			}
		}()
	}
	wg.Wait()
	if st := w.Status(); st.WithFingerprint+st.WithoutFingerprint != 2000 {
		t.Errorf("counted %d requests, want 2000", st.WithFingerprint+st.WithoutFingerprint)
	}
}

// TestTLSWatchOnStatus: GET /robots/status carries the table as JSON
// (empty lists, not null, before anything is seen), and the status page
// shows it: the fingerprint, what it claimed, its network, and the
// warning that no request carries a fingerprint when none does.
func TestTLSWatchOnStatus(t *testing.T) {
	now := time.Now()
	empty, err := json.Marshal(handlerStatusOf(0, Site{Source: "site", Mode: "enforce"}, now))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(empty, []byte(`"tls":{"with_fingerprint":0,"without_fingerprint":0,"logged":[],"enforced":[]}`)) {
		t.Errorf("status before anything is seen: %s", empty)
	}

	var w TLSWatch
	w.Seen(true)
	w.Judged(judgement(goJA4, "Chrome", "192.0.2.1", false, now))
	page := renderStatus(t, handlerStatusOf(0, Site{Source: "site", Mode: "enforce", TLS: w.Status()}, now))
	for _, want := range []string{"The tls signal would refuse", goJA4, "Chrome", "192.0.2.1/32", "signature_algorithms_cert", "<b>1</b> with a TLS fingerprint"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(page, "the tls signal sees nothing") {
		t.Error("the page warns of no fingerprint while there is one")
	}

	var none TLSWatch
	none.Seen(false)
	page = renderStatus(t, handlerStatusOf(0, Site{Source: "site", Mode: "enforce", TLS: none.Status()}, now))
	if !strings.Contains(page, "the tls signal sees nothing") || !strings.Contains(page, "No browser claim refuted") {
		t.Error("with no fingerprint at all, the page must say the signal sees nothing")
	}
	page = renderStatus(t, handlerStatusOf(0, Site{Source: "site", Mode: "enforce"}, now))
	if strings.Contains(page, "signal tls") {
		t.Error("a site block with no request over HTTPS shows the tls section")
	}
}

func renderStatus(t *testing.T, hs HandlerStatus) string {
	t.Helper()
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, pageData{StatusReport: StatusReport{Time: time.Now(), Handlers: []HandlerStatus{hs}}}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
