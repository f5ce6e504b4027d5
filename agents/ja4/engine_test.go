package ja4

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestClassifyRecorded: every recorded hello's engine, and the fact named.
// Every recording needs a line, so a new one is classified on purpose.
func TestClassifyRecorded(t *testing.T) {
	want := map[string]struct {
		engine Engine
		fact   string // a substring of Verdict.Fact
	}{
		"chromium-headed":      {Chromium, "application_settings"},
		"chromium-headless":    {Chromium, "application_settings"},
		"firefox-esr-headed":   {Firefox, "delegated_credentials"},
		"firefox-esr-headless": {Firefox, "delegated_credentials"},
		"curl":                 {Library, "encrypt_then_mac"},
		"openssl-s-client":     {Library, "encrypt_then_mac"},
		"python-urllib":        {Library, "encrypt_then_mac"},
		"python-requests":      {Library, "encrypt_then_mac"},
		"scrapy":               {Library, "encrypt_then_mac"},
		"node-fetch":           {Library, "encrypt_then_mac"},
		"node-https":           {Library, "encrypt_then_mac"},
		"lynx":                 {Library, "encrypt_then_mac"},
		"wget":                 {Library, "post_handshake_auth"},
		"wget2":                {Library, "CCM"},
		"go-nethttp":           {Library, "signature_algorithms_cert"},
		"java-httpclient":      {Library, "signature_algorithms_cert"},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "clienthellos", "*.hex"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Errorf("%d recorded hellos, %d expected engines: every recording needs one", len(files), len(want))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".hex")
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: no expected engine", name)
			continue
		}
		h, err := ParseClientHello(readHello(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := Classify(h)
		if v.Engine != w.engine || !strings.Contains(v.Fact, w.fact) {
			t.Errorf("%s: %v (%s), want %v (%s)", name, v.Engine, v.Fact, w.engine, w.fact)
		}
		if v.Engine.IsBrowser() != ClaimHolds(v.Engine) {
			t.Errorf("%s: a browser engine's claim must hold, a library's fail", name)
		}
	}
}

// safari153 is Safari 15.3 on macOS 11.6's ClientHello as curl-impersonate
// publishes it (its safari signature file), built here: no Safari runs on
// this machine, so it is the only hello of the corpus not recorded.
func safari153() helloBuilder {
	return helloBuilder{
		ciphers: []uint16{0x2a2a, 0x1301, 0x1302, 0x1303, 0xc02c, 0xc02b, 0xcca9, 0xc030, 0xc02f, 0xcca8, 0xc024, 0xc023, 0xc00a, 0xc009, 0xc028, 0xc027, 0xc014, 0xc013, 0x009d, 0x009c, 0x003d, 0x003c, 0x0035, 0x002f, 0xc008, 0xc012, 0x000a},
		exts:    []uint16{0x0a0a, 0x0000, 0x0017, 0xff01, 0x000a, 0x000b, 0x0010, 0x0005, 0x000d, 0x0012, 0x0033, 0x002d, 0x002b, 0x001b, 0x0015, 0x1a1a},
		groups:  []uint16{0x3a3a, 0x001d, 0x0017, 0x0018, 0x0019},
		sigs:    []uint16{0x0403, 0x0804, 0x0401, 0x0503, 0x0203, 0x0805, 0x0805, 0x0501, 0x0806, 0x0601, 0x0201},
		vers:    []uint16{0x4a4a, 0x0304, 0x0303, 0x0302, 0x0301},
		alpn:    []string{"h2", "http/1.1"},
	}
}

// TestClassifyFacts: each structural fact, one at a time, on hellos built
// from the recorded ones' lists. A fact of a browser engine wins over a
// library's feature, and a hello with neither is Unknown.
func TestClassifyFacts(t *testing.T) {
	chromium := helloBuilder{
		ciphers: []uint16{0x9a9a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f},
		exts:    []uint16{0xfafa, 0x0000, 0x001b, 0x44cd, 0xfe0d, 0x002b, 0x9a9a},
		groups:  []uint16{0x9a9a, 0x11ec, 0x001d},
		vers:    []uint16{0x1a1a, 0x0304, 0x0303},
		alpn:    []string{"h2", "http/1.1"},
	}
	firefox := helloBuilder{
		ciphers: []uint16{0x1301, 0x1303, 0x1302, 0xc02b},
		exts:    []uint16{0x0000, 0x0017, 0x0022, 0x001c, 0xfe0d},
		groups:  []uint16{0x11ec, 0x001d},
	}
	with := func(hb helloBuilder, f func(*helloBuilder)) helloBuilder {
		hb.ciphers, hb.exts, hb.groups, hb.vers = slices.Clone(hb.ciphers), slices.Clone(hb.exts), slices.Clone(hb.groups), slices.Clone(hb.vers)
		f(&hb)
		return hb
	}
	drop := func(list []uint16, v uint16) []uint16 {
		return slices.DeleteFunc(list, func(x uint16) bool { return x == v })
	}
	cases := []struct {
		name string
		hb   helloBuilder
		want Engine
	}{
		{"Chromium", chromium, Chromium},
		{"Chromium, old ALPS code point", with(chromium, func(hb *helloBuilder) { hb.exts = append(drop(hb.exts, 0x44cd), 0x4469) }), Chromium},
		{"Chromium before ALPS", with(chromium, func(hb *helloBuilder) { hb.exts = drop(hb.exts, 0x44cd) }), Chromium},
		{"Safari 15.3 (published lists)", safari153(), Safari},
		{"GREASE beats a library feature (impersonation passes)", with(chromium, func(hb *helloBuilder) { hb.exts = append(hb.exts, 0x0016) }), Chromium},
		{"GREASE in ciphers only", with(chromium, func(hb *helloBuilder) { hb.exts = drop(hb.exts, 0xfafa); hb.exts = drop(hb.exts, 0x9a9a) }), Unknown},
		{"GREASE in ciphers only, with a library feature", with(chromium, func(hb *helloBuilder) {
			hb.exts = append(drop(drop(hb.exts, 0xfafa), 0x9a9a), 0x0016)
		}), Unknown},
		{"Firefox", firefox, Firefox},
		{"Firefox without delegated credentials", with(firefox, func(hb *helloBuilder) { hb.exts = drop(hb.exts, 0x0022) }), Unknown},
		{"record_size_limit alone (GnuTLS sends it)", with(firefox, func(hb *helloBuilder) { hb.exts = append(drop(hb.exts, 0x0022), 0x0016) }), Library},
		{"encrypt_then_mac", helloBuilder{ciphers: []uint16{0x1301}, exts: []uint16{0x0016}}, Library},
		{"post_handshake_auth", helloBuilder{ciphers: []uint16{0x1301}, exts: []uint16{0x0031}}, Library},
		{"signature_algorithms_cert", helloBuilder{ciphers: []uint16{0x1301}, exts: []uint16{0x0032}}, Library},
		{"status_request_v2", helloBuilder{ciphers: []uint16{0x1301}, exts: []uint16{0x0011}}, Library},
		{"renegotiation SCSV", helloBuilder{ciphers: []uint16{0x1301, 0x00ff}}, Library},
		{"TLS 1.3 CCM", helloBuilder{ciphers: []uint16{0x1301, 0x1304}}, Library},
		{"TLS 1.3 CCM_8", helloBuilder{ciphers: []uint16{0x1305}}, Library},
		{"SHA-224 signature", helloBuilder{ciphers: []uint16{0x1301}, sigs: []uint16{0x0403, 0x0303}}, Library},
		{"nothing telling", helloBuilder{ciphers: []uint16{0x1301, 0xc02b}, exts: []uint16{0x0000, 0x0017, 0xff01}, sigs: []uint16{0x0403}}, Unknown},
		{"TLS 1.2, no extensions", helloBuilder{ciphers: []uint16{0xc02f}, noVersions: true}, Unknown},
	}
	for _, tc := range cases {
		h, err := ParseClientHello(tc.hb.record())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		v := Classify(h)
		if v.Engine != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, v.Engine, v.Fact, tc.want)
		}
		if (v.Fact == "") != (v.Engine == Unknown) {
			t.Errorf("%s: fact %q for %v: every verdict but Unknown names its fact", tc.name, v.Fact, v.Engine)
		}
	}
	if v := Classify(nil); v.Engine != Unknown {
		t.Errorf("no hello: %v", v.Engine)
	}
}

// TestClaimHolds: only a library's handshake refutes a browser's claim.
func TestClaimHolds(t *testing.T) {
	for e, want := range map[Engine]bool{Unknown: true, Chromium: true, Firefox: true, Safari: true, Library: false} {
		if ClaimHolds(e) != want {
			t.Errorf("ClaimHolds(%v) = %v, want %v", e, !want, want)
		}
	}
	names := map[string]bool{}
	for e := Unknown; e <= Library; e++ {
		names[e.String()] = true
	}
	if len(names) != 5 {
		t.Errorf("engine names not distinct: %v", names)
	}
}

// TestOffersFinalTLS13: the RFC's version, not a draft's.
func TestOffersFinalTLS13(t *testing.T) {
	for _, tc := range []struct {
		vers []uint16
		want bool
	}{
		{[]uint16{0x0304, 0x0303}, true},
		{[]uint16{0x7f1c, 0x0303}, false}, // draft 28, as Chrome 69 sent
		{[]uint16{0x0303}, false},
	} {
		h, err := ParseClientHello(helloBuilder{ciphers: []uint16{0x1301}, vers: tc.vers}.record())
		if err != nil {
			t.Fatal(err)
		}
		if h.OffersFinalTLS13() != tc.want {
			t.Errorf("versions %04x: %v, want %v", tc.vers, !tc.want, tc.want)
		}
	}
}

// BenchmarkClassify is the classification's cost per connection, on
// Chromium's hello (the first rule) and on Go's (the last library rule
// but one).
func BenchmarkClassify(b *testing.B) {
	for _, name := range []string{"chromium-headed", "go-nethttp"} {
		h, err := ParseClientHello(readHello(b, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(h)
			}
		})
	}
}
