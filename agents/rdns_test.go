package agents

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeDNS is a real DNS server on loopback answering PTR, A and AAAA
// queries from tables. Names are matched case-insensitively.
type fakeDNS struct {
	t    testing.TB
	addr string

	mu      sync.Mutex
	ptr     map[string][]string      // reverse name -> PTR targets; present but empty = NOERROR, no data
	hosts   map[string][]netip.Addr  // host name -> addresses; present but empty = NOERROR, no data
	rcode   map[string]int           // name -> forced response code (SERVFAIL, REFUSED)
	delay   map[string]time.Duration // name -> sleep before answering
	queries map[string]int           // "TYPE name" -> count
}

// newFakeDNS starts a UDP server on 127.0.0.1:0, stopped at test end.
func newFakeDNS(t testing.TB) *fakeDNS {
	t.Helper()
	f := &fakeDNS{
		t:       t,
		ptr:     map[string][]string{},
		hosts:   map[string][]netip.Addr{},
		rcode:   map[string]int{},
		delay:   map[string]time.Duration{},
		queries: map[string]int{},
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	f.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: f}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.ShutdownContext(ctx)
	})
	return f
}

func fakeFQDN(name string) string { return dns.Fqdn(strings.ToLower(name)) }

func reverseName(t testing.TB, ip string) string {
	t.Helper()
	arpa, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatalf("reverse %s: %v", ip, err)
	}
	return arpa
}

// PTR records ip -> names (nil names: NXDOMAIN is the default anyway).
func (f *fakeDNS) PTR(ip string, names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ptr[reverseName(f.t, ip)] = append([]string{}, names...)
}

// Host records name -> addresses.
func (f *fakeDNS) Host(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	f.hosts[fakeFQDN(name)] = as
}

// Rcode forces a response code for a name (use reverseName for PTR names).
func (f *fakeDNS) Rcode(name string, rcode int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rcode[fakeFQDN(name)] = rcode
}

// Delay makes answers for a name late.
func (f *fakeDNS) Delay(name string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay[fakeFQDN(name)] = d
}

// Count returns how many queries of the type arrived for the name.
func (f *fakeDNS) Count(qtype uint16, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[dns.TypeToString[qtype]+" "+fakeFQDN(name)]
}

// Total returns the number of queries received.
func (f *fakeDNS) Total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.queries {
		n += c
	}
	return n
}

func (f *fakeDNS) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.RecursionAvailable = true
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	f.mu.Lock()
	f.queries[dns.TypeToString[q.Qtype]+" "+name]++
	delay := f.delay[name]
	rcode, forced := f.rcode[name]
	ptrs, hasPTR := f.ptr[name]
	addrs, hasHost := f.hosts[name]
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: 300}
	}
	switch {
	case forced:
		m.Rcode = rcode
	case q.Qtype == dns.TypePTR:
		if !hasPTR {
			m.Rcode = dns.RcodeNameError
			break
		}
		for _, p := range ptrs {
			m.Answer = append(m.Answer, &dns.PTR{Hdr: hdr(dns.TypePTR), Ptr: dns.Fqdn(p)})
		}
	case q.Qtype == dns.TypeA || q.Qtype == dns.TypeAAAA:
		if !hasHost {
			m.Rcode = dns.RcodeNameError
			break
		}
		for _, a := range addrs {
			if a.Is4() && q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr(dns.TypeA), A: a.AsSlice()})
			}
			if a.Is6() && q.Qtype == dns.TypeAAAA {
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: a.AsSlice()})
			}
		}
	}
	_ = w.WriteMsg(m)
}

// Resolver returns a pure-Go resolver that sends every query to f.
func (f *fakeDNS) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", f.addr)
		},
	}
}

func TestRDNSHasSuffix(t *testing.T) {
	suffixes := []string{"googlebot.com", "google.com"}
	tests := []struct {
		name string
		want bool
	}{
		{"crawl-66-249-66-1.googlebot.com", true},
		{"crawl-66-249-66-1.googlebot.com.", true},
		{"CRAWL-66-249-66-1.GOOGLEBOT.COM.", true},
		{"rate-limited-proxy-1-2-3-4.google.com", true},
		{"googlebot.com", true},
		{"googlebot.com.", true},
		{"geo.crawl.googlebot.com", true},
		{"evilgooglebot.com", false},
		{"googlebot.com.evil.example", false},
		{"googlebot.com.evil.example.", false},
		{"xgoogle.com", false},
		{"google.co", false},
		{"com", false},
		{"", false},
		{".", false},
		{"googlebot.co.m", false},
		{"1.2.3.4.bc.googleusercontent.com", false},
	}
	for _, tt := range tests {
		if got := rdnsHasSuffix(tt.name, suffixes); got != tt.want {
			t.Errorf("rdnsHasSuffix(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestForwardConfirmDirect(t *testing.T) {
	f := newFakeDNS(t)
	f.PTR("192.0.2.1", "crawl-192-0-2-1.googlebot.com")
	f.Host("crawl-192-0-2-1.googlebot.com", "192.0.2.1")
	// Too many matching names: only maxPTRNames are tried.
	var many []string
	for i := range 10 {
		n := "n" + string(rune('a'+i)) + ".googlebot.com"
		many = append(many, n)
		f.Host(n, "198.51.100.1")
	}
	f.PTR("192.0.2.2", many...)
	r := f.Resolver()
	ctx := context.Background()
	if got := forwardConfirm(ctx, r, []string{"googlebot.com"}, netip.MustParseAddr("192.0.2.1")); got != rdnsConfirmed {
		t.Errorf("confirmed case: got %v", got)
	}
	if got := forwardConfirm(ctx, r, []string{"googlebot.com"}, netip.MustParseAddr("192.0.2.2")); got != rdnsRejected {
		t.Errorf("many names: got %v", got)
	}
	forward := 0
	for _, n := range many {
		forward += f.Count(dns.TypeA, n)
	}
	if forward != maxPTRNames {
		t.Errorf("forward lookups for a PTR with 10 names = %d, want %d", forward, maxPTRNames)
	}
}
