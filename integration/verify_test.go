package integration

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsServer is a real DNS server on loopback answering PTR and A queries
// from a table, so verification runs end to end without leaving the machine.
type dnsServer struct {
	srv  *dns.Server
	addr string
	mu   sync.Mutex
	ptr  map[string]string // reverse name -> PTR target
	a    map[string]string // name -> IPv4
	fail map[string]bool   // reverse names answered with SERVFAIL
}

func startDNS(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dns listen: %v", err)
	}
	d := &dnsServer{addr: pc.LocalAddr().String(), ptr: map[string]string{}, a: map[string]string{}, fail: map[string]bool{}}
	d.srv = &dns.Server{PacketConn: pc, Handler: d}
	started := make(chan struct{})
	d.srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = d.srv.ActivateAndServe() }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("dns server did not start")
	}
	t.Cleanup(func() { _ = d.srv.Shutdown() })
	return d
}

func (d *dnsServer) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	name := strings.ToLower(q.Question[0].Name)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch q.Question[0].Qtype {
	case dns.TypePTR:
		if d.fail[name] {
			m.Rcode = dns.RcodeServerFailure
		} else if target, ok := d.ptr[name]; ok {
			m.Answer = append(m.Answer, &dns.PTR{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60}, Ptr: target})
		} else {
			m.Rcode = dns.RcodeNameError
		}
	case dns.TypeA:
		if ip, ok := d.a[name]; ok {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ip)})
		} else {
			m.Rcode = dns.RcodeNameError
		}
	default:
		// AAAA and others: empty answer (NOERROR, no data).
	}
	_ = w.WriteMsg(m)
}

// TestVerificationSpoofing: a request that claims Googlebot is judged by
// Googlebot's group only when reverse DNS proves it; a provable impostor
// is refused (or judged as "*" with spoofed wildcard); a DNS failure is
// never taken as proof of a spoof.
func TestVerificationSpoofing(t *testing.T) {
	d := startDNS(t)
	d.mu.Lock()
	// 192.0.2.20: a real Googlebot (PTR and forward A agree).
	d.ptr["20.2.0.192.in-addr.arpa."] = "crawl-192-0-2-20.googlebot.com."
	d.a["crawl-192-0-2-20.googlebot.com."] = "192.0.2.20"
	// 192.0.2.30: PTR claims googlebot.com but the forward lookup disagrees.
	d.ptr["30.2.0.192.in-addr.arpa."] = "crawl-192-0-2-99.googlebot.com."
	d.a["crawl-192-0-2-99.googlebot.com."] = "192.0.2.99"
	// 192.0.2.40: the DNS server fails.
	d.fail["40.2.0.192.in-addr.arpa."] = true
	// 192.0.2.50: a look-alike domain.
	d.ptr["50.2.0.192.in-addr.arpa."] = "crawl.googlebot.com.evil.example."
	d.a["crawl.googlebot.com.evil.example."] = "192.0.2.50"
	// 192.0.2.10: no PTR at all (NXDOMAIN).
	d.mu.Unlock()

	cfg := strings.Replace(globals, "auto_https off", `auto_https off
	servers {
		trusted_proxies static 127.0.0.1/32
	}`, 1)
	rules := `"User-agent: Googlebot\nDisallow: /nogoogle/\nCrawl-delay: 10\n\nUser-agent: *\nDisallow: /\n"`
	c := newClient(t, cfg+siteURL("verify.localhost")+` {
	robots {
		source inline `+rules+`
		verify {
			resolver `+d.addr+`
			timeout 1s
		}
	}
	respond "ok"
}
`+siteURL("wild.localhost")+` {
	robots {
		source inline `+rules+`
		spoofed wildcard
		verify {
			resolver `+d.addr+`
		}
	}
	respond "ok"
}
`)
	as := func(host, ip, path string) response {
		return c.get(siteURL(host+".localhost")+path, googleUA, "X-Forwarded-For: "+ip)
	}
	check := func(res response, status int, contains string) {
		t.Helper()
		if res.status != status || !strings.Contains(res.body, contains) {
			t.Errorf("got %d %q, want %d containing %q", res.status, res.body, status, contains)
		}
	}
	check(as("verify", "192.0.2.20", "/page"), 200, "ok")
	check(as("verify", "192.0.2.20", "/nogoogle/x"), 403, "Disallow: /nogoogle/")
	check(as("verify", "192.0.2.10", "/page"), 403, "claims to be Googlebot")
	check(as("verify", "192.0.2.30", "/page"), 403, "claims to be Googlebot")
	check(as("verify", "192.0.2.50", "/page"), 403, "claims to be Googlebot")
	// SERVFAIL: unverified. Such a claim gets nothing more lenient than
	// "*": where only "*" refuses, 503 with Retry-After and no strike, so
	// the real crawler comes back once it can be verified.
	res := as("verify", "192.0.2.40", "/page")
	check(res, 503, "could not be verified")
	if res.header.Get("Retry-After") == "" {
		t.Error("unverified claim: 503 without Retry-After")
	}
	check(as("verify", "192.0.2.40", "/nogoogle/x"), 403, "Disallow: /nogoogle/")
	// spoofed wildcard: the impostor gets the "*" group.
	check(as("wild", "192.0.2.10", "/page"), 403, "Disallow: /")
	check(as("wild", "192.0.2.20", "/page"), 200, "ok")
	// A spoofer still reads robots.txt: the enforced text (source inline).
	check(as("verify", "192.0.2.10", "/robots.txt"), 200, "User-agent: Googlebot")
	// Googlebot documents that it ignores Crawl-delay: never throttled.
	for i := 0; i < 3; i++ {
		check(as("verify", "192.0.2.20", "/page"), 200, "ok")
	}
}
