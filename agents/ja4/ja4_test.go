package ja4

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shape is what every JA4 looks like.
var shape = regexp.MustCompile(`^[tq](13|12|11|10|s3|s2|d1|d2|d3|00)[di][0-9]{4}[0-9A-Za-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$`)

// shapeOK reports whether s has the shape of a JA4 fingerprint.
func shapeOK(s string) bool { return shape.MatchString(s) }

// readHello reads a recorded ClientHello (hex) from testdata/clienthellos.
func readHello(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "clienthellos", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return raw
}

// TestRecordedHellos checks the JA4 and the structural facts of the real
// ClientHellos recorded on this machine (testdata/clienthellos/README.md
// says how and with which versions).
//
// Two were checked by hand against the specification, from their JA4_r
// (JA4R) and `printf %s LIST | sha256sum | cut -c1-12`:
//
// chromium (156, BoringSSL): t13d1517h2_8daaf6152771_cb7bf5808d99
//   - t: TCP; 13: supported_versions is [GREASE 0x1a1a, 0x0304, 0x0303],
//     highest non-GREASE 0x0304; d: server_name present (localhost).
//   - 15 ciphers: 16 sent, the first (0x9a9a) GREASE. 17 extensions: 19
//     sent, two GREASE (first and last). h2: ALPN ["h2", "http/1.1"].
//   - b: the sorted list 002f,0035,009c,009d,1301,1302,1303,c013,c014,
//     c02b,c02c,c02f,c030,cca8,cca9 is the specification's own example,
//     hash 8daaf6152771.
//   - c: 0005,000a,000b,000d,0012,0017,001b,0023,002b,002d,0033,44cd,ca34,
//     fe0d,ff01 (0000 and 0010 left out) "_" 0904,0905,0906,0403,0804,
//     0401,0503,0805,0501,0806,0601: Chromium sends a GREASE value first in
//     signature_algorithms (0xfafa here, drawn anew per connection since
//     Chrome 152), which the specification's "ignore GREASE values
//     anywhere" drops; FoxIO's tools were corrected to do the same and
//     published this very fingerprint for Chromium 152.
//
// curl (7.88.1, OpenSSL 3.0.19): t13d3112h2_e8f1e7e78f70_b26ce05bbdd6
//   - 13: supported_versions [0x0304 .. 0x0301]; d: SNI; 31 ciphers and 12
//     extensions, no GREASE anywhere; h2: first ALPN value "h2".
//   - b: hash of the 31 sorted ciphers 002f,0033,...,ccaa (00ff, the
//     renegotiation SCSV, counted as the specification says).
//   - c: 000a,000b,000d,0015,0016,0017,002b,002d,0031,0033 "_" the 20
//     signature algorithms in the order sent (0403,0503,0603,0807,...).
func TestRecordedHellos(t *testing.T) {
	cases := []struct {
		name   string
		ja4    string
		grease bool   // any GREASE value: BoringSSL's mark
		alpn   string // first ALPN value, "" without
		sni    bool
	}{
		{"chromium-headless", "t13d1517h2_8daaf6152771_cb7bf5808d99", true, "h2", true},
		{"chromium-headed", "t13d1517h2_8daaf6152771_cb7bf5808d99", true, "h2", true},
		{"firefox-esr-headless", "t13d1617h2_86a278354501_3cbfd9057e0d", false, "h2", true},
		{"firefox-esr-headed", "t13d1617h2_86a278354501_3cbfd9057e0d", false, "h2", true},
		{"curl", "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", false, "h2", true},
		{"wget", "t13d291300_723694b0fccc_899037bd0b8c", false, "", true},
		{"wget2", "t13d2913h2_723694b0fccc_5671b5df5029", false, "h2", true},
		{"python-urllib", "t13d181100_85036bcba153_d41ae481755e", false, "", true},
		{"python-requests", "t13d1812h1_85036bcba153_b26ce05bbdd6", false, "http/1.1", true},
		{"scrapy", "t13d311000_e8f1e7e78f70_a29327ec888c", false, "", true},
		{"go-nethttp", "t13d1312h2_f57a46bbacb6_ab7e3b40a677", false, "h2", true},
		{"node-fetch", "t13d5911h1_a33745022dd6_1f22a2ca17c4", false, "http/1.1", true},
		{"node-https", "t13d591000_a33745022dd6_1f22a2ca17c4", false, "", true},
		{"openssl-s-client", "t13d311000_e8f1e7e78f70_1f22a2ca17c4", false, "", true},
		{"java-httpclient", "t13d3713h2_db35923f8641_7c76daad20ec", false, "h2", true},
		{"lynx", "t13d291300_723694b0fccc_2cc26d266019", false, "", true},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "clienthellos", "*.hex"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(cases) {
		t.Errorf("%d recorded hellos, %d cases: every recording needs a case", len(files), len(cases))
	}
	seen := map[string]string{}
	for _, tc := range cases {
		h, err := ParseClientHello(readHello(t, tc.name))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := h.JA4()
		if got != tc.ja4 {
			t.Errorf("%s: JA4 %s, want %s (JA4_r %s)", tc.name, got, tc.ja4, h.JA4R())
		}
		if !shapeOK(got) {
			t.Errorf("%s: JA4 %q has not the shape of one", tc.name, got)
		}
		if h.GREASE.Any() != tc.grease {
			t.Errorf("%s: GREASE %+v, want any=%v", tc.name, h.GREASE, tc.grease)
		}
		if tc.grease && !(h.GREASE.Ciphers && h.GREASE.Extensions && h.GREASE.Groups && h.GREASE.Versions) {
			t.Errorf("%s: BoringSSL GREASEs ciphers, extensions, groups and versions; got %+v", tc.name, h.GREASE)
		}
		first := ""
		if len(h.ALPN) > 0 {
			first = h.ALPN[0]
		}
		if first != tc.alpn {
			t.Errorf("%s: first ALPN %q, want %q", tc.name, first, tc.alpn)
		}
		if h.HasSNI != tc.sni || h.Protocol != 't' || h.Version() != 0x0304 {
			t.Errorf("%s: sni %v protocol %q version %04x, want sni %v, 't', 0304", tc.name, h.HasSNI, h.Protocol, h.Version(), tc.sni)
		}
		if len(h.SupportedGroups) == 0 || len(h.SignatureAlgorithms) == 0 || len(h.CipherSuites) == 0 {
			t.Errorf("%s: groups %x, signature algorithms %x, ciphers %x: all expected", tc.name, h.SupportedGroups, h.SignatureAlgorithms, h.CipherSuites)
		}
		seen[tc.name] = got
	}
	// Chromium's is not any library's.
	for _, lib := range []string{"curl", "python-urllib", "python-requests", "go-nethttp", "node-fetch", "node-https", "java-httpclient", "scrapy", "wget", "openssl-s-client"} {
		if seen[lib] == seen["chromium-headless"] {
			t.Errorf("%s has Chromium's JA4", lib)
		}
	}
}

// TestSpecificationExample builds the specification's example ClientHello
// (its cipher, extension and signature algorithm lists, with GREASE values
// added) and expects the fingerprint the specification gives for it.
func TestSpecificationExample(t *testing.T) {
	hb := helloBuilder{
		ciphers: []uint16{0x2a2a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035},
		exts:    []uint16{0x0a0a, 0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015, 0xfafa},
		sigs:    []uint16{0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601},
		alpn:    []string{"h2", "http/1.1"},
		vers:    []uint16{0x3a3a, 0x0304, 0x0303},
		groups:  []uint16{0x4a4a, 0x001d, 0x0017},
	}
	h, err := ParseClientHello(hb.record())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.JA4(), "t13d1516h2_8daaf6152771_e5627efa2ab1"; got != want {
		t.Errorf("JA4 %s, want %s (JA4_r %s)", got, want, h.JA4R())
	}
	want := "t13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_0403,0804,0401,0503,0805,0501,0806,0601"
	if got := h.JA4R(); got != want {
		t.Errorf("JA4_r %s, want %s", got, want)
	}
	if !h.GREASE.Ciphers || !h.GREASE.Extensions || !h.GREASE.Groups || !h.GREASE.Versions || h.GREASE.SignatureAlgorithms {
		t.Errorf("GREASE %+v", h.GREASE)
	}
	// Without signature algorithms the list ends without "_" (the
	// specification's second example, same extensions).
	hb.sigs = nil
	h, err = ParseClientHello(hb.record())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.JA4(); !strings.HasSuffix(got, "_6d807ffa2a79") {
		t.Errorf("JA4 without signature algorithms %s, want c = 6d807ffa2a79", got)
	}
}

// TestEdgeCases covers the rules of the specification that the recorded
// hellos do not exercise.
func TestEdgeCases(t *testing.T) {
	cases := []struct {
		name string
		hb   helloBuilder
		want string // a prefix or the whole fingerprint
	}{
		{"no SNI, no ALPN, legacy version", helloBuilder{ciphers: []uint16{0x002f}, exts: []uint16{0x000b}, legacy: 0x0303, noVersions: true}, "t12i010100_"},
		{"single-character ALPN", helloBuilder{ciphers: []uint16{0x002f}, alpn: []string{"h"}}, "t13i0102hh_"},
		{"non-alphanumeric ALPN: hex", helloBuilder{ciphers: []uint16{0x002f}, alpn: []string{"\x30\x31\xab\xcd"}}, "t13i01023d_"},
		{"empty ALPN value", helloBuilder{ciphers: []uint16{0x002f}, alpn: []string{""}}, "t13i010200_"},
		{"only SNI and ALPN: empty c", helloBuilder{ciphers: []uint16{0x002f}, exts: []uint16{0x0000}, alpn: []string{"h2"}, noVersions: true, legacy: 0x0303}, "t12d0102h2_"},
		{"QUIC transport parameters", helloBuilder{ciphers: []uint16{0x1301}, exts: []uint16{0x0039}}, "q13i0102"},
		{"unknown version", helloBuilder{ciphers: []uint16{0x002f}, vers: []uint16{0x0305}}, "t00i"},
		{"all-GREASE versions fall back to client_version", helloBuilder{ciphers: []uint16{0x002f}, vers: []uint16{0x0a0a}, legacy: 0x0302}, "t11i"},
		{"no ciphers but GREASE", helloBuilder{ciphers: []uint16{0x0a0a}}, "t13i0001"},
	}
	for _, tc := range cases {
		h, err := ParseClientHello(tc.hb.record())
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := h.JA4()
		if !strings.HasPrefix(got, tc.want) || !shapeOK(got) {
			t.Errorf("%s: JA4 %s, want prefix %s (JA4_r %s)", tc.name, got, tc.want, h.JA4R())
		}
	}
	h, _ := ParseClientHello(helloBuilder{ciphers: []uint16{0x0a0a}}.record())
	if got := h.JA4(); !strings.Contains(got, "_000000000000_") {
		t.Errorf("no cipher left: %s, want b = 000000000000", got)
	}
	h, _ = ParseClientHello(helloBuilder{ciphers: []uint16{0x002f}, exts: []uint16{0x0000}, alpn: []string{"h2"}, noVersions: true}.record())
	if got := h.JA4(); !strings.HasSuffix(got, "_000000000000") {
		t.Errorf("only SNI and ALPN: %s, want c = 000000000000", got)
	}
	many := make([]uint16, 120)
	for i := range many {
		many[i] = uint16(0x1000 + i)
	}
	h, _ = ParseClientHello(helloBuilder{ciphers: many, exts: many[:110], noVersions: true, legacy: 0x0303}.record())
	if got := h.JA4(); !strings.HasPrefix(got, "t12i9999") {
		t.Errorf("over 99 ciphers and extensions: %s, want counts capped at 99", got)
	}
}

// TestMalformed: truncated or malformed input gets an error naming what is
// wrong, wrapping ErrTruncated or ErrMalformed.
func TestMalformed(t *testing.T) {
	good := readHello(t, "curl")
	if _, err := ParseClientHello(good); err != nil {
		t.Fatal(err)
	}
	// Every proper prefix is truncated (or, below the header, too short).
	for n := 0; n < len(good); n++ {
		if _, err := ParseClientHello(good[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix of %d bytes: %v, want ErrTruncated", n, err)
		}
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"not handshake", mutate(func(b []byte) []byte { b[0] = 0x17; return b }), ErrMalformed},
		{"HTTP request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrMalformed},
		{"not ClientHello", mutate(func(b []byte) []byte { b[5] = 2; return b }), ErrMalformed},
		{"record too long", mutate(func(b []byte) []byte { binary.BigEndian.PutUint16(b[3:], MaxRecordPayload+1); return b }), ErrMalformed},
		{"hello spans records", mutate(func(b []byte) []byte { b[6], b[7], b[8] = 0, 0x40, 0; return b }), ErrTruncated},
		{"cipher list odd", mutate(func(b []byte) []byte {
			// session id length at 5+4+2+32
			off := 5 + 4 + 2 + 32
			off += 1 + int(b[off])
			n := binary.BigEndian.Uint16(b[off:])
			binary.BigEndian.PutUint16(b[off:], n-1)
			return b
		}), ErrMalformed},
		{"session id too long", mutate(func(b []byte) []byte { b[5+4+2+32] = 33; return b }), ErrMalformed},
	}
	for _, tc := range cases {
		_, err := ParseClientHello(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzParseClientHello: any bytes in, no panic; a parsed hello gives a
// fingerprint of the right shape and a consistent engine verdict, and the
// lists it keeps are no longer than the record allows.
func FuzzParseClientHello(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "clienthellos", "*.hex"))
	for _, file := range files {
		f.Add(readHello(f, strings.TrimSuffix(filepath.Base(file), ".hex")))
	}
	f.Add(helloBuilder{ciphers: []uint16{0x2a2a, 0x1301}, exts: []uint16{0x0000, 0x0039}, alpn: []string{"\xff"}, sigs: []uint16{0x0a0a}}.record())
	f.Add(safari153().record())
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseClientHello(data)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v wraps neither ErrTruncated nor ErrMalformed", err)
			}
			return
		}
		if s := h.JA4(); !shapeOK(s) || !IsFingerprint(s) {
			t.Fatalf("JA4 %q has not the shape of one", s)
		}
		// The classification runs on whatever parsed: an engine in range,
		// a fact for every verdict but Unknown, GREASE only for engines.
		v := Classify(h)
		if v.Engine > Library || (v.Fact == "") != (v.Engine == Unknown) {
			t.Fatalf("verdict %+v", v)
		}
		if v.Engine == Library && h.GREASE.Any() {
			t.Fatalf("a hello with GREASE judged a library's: %+v", v)
		}
		_ = h.OffersFinalTLS13()
		total := len(h.CipherSuites) + len(h.Extensions) + len(h.SupportedGroups) + len(h.SignatureAlgorithms) + len(h.SupportedVersions) + len(h.ALPN)
		if 2*total > MaxRecordPayload {
			t.Fatalf("%d values kept from a record of at most %d bytes", total, MaxRecordPayload)
		}
	})
}

// BenchmarkParseClientHello is the parse of Chromium's hello (about 2 KB).
func BenchmarkParseClientHello(b *testing.B) {
	rec := readHello(b, "chromium-headed")
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if _, err := ParseClientHello(rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJA4 is the whole per-connection cost: parse Chromium's hello and
// compute its fingerprint.
func BenchmarkJA4(b *testing.B) {
	rec := readHello(b, "chromium-headed")
	b.ReportAllocs()
	for b.Loop() {
		h, err := ParseClientHello(rec)
		if err != nil {
			b.Fatal(err)
		}
		_ = h.JA4()
	}
}

// helloBuilder writes a ClientHello record from lists, for tests.
type helloBuilder struct {
	legacy                            uint16 // client_version, 0x0303 when zero
	ciphers, exts, sigs, vers, groups []uint16
	alpn                              []string
	noVersions                        bool // no supported_versions extension even if vers is empty
}

func (hb helloBuilder) record() []byte {
	u16 := func(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
	vec16 := func(b, body []byte) []byte { return append(u16(b, uint16(len(body))), body...) }
	list := func(vs []uint16) []byte {
		var out []byte
		for _, v := range vs {
			out = u16(out, v)
		}
		return out
	}
	exts := slices.Clone(hb.exts)
	add := func(t uint16) {
		if !slices.Contains(exts, t) {
			exts = append(exts, t)
		}
	}
	if len(hb.alpn) > 0 {
		add(extALPN)
	}
	if len(hb.sigs) > 0 {
		add(extSignatureAlgorithms)
	}
	if len(hb.groups) > 0 {
		add(extSupportedGroups)
	}
	vers := hb.vers
	if !hb.noVersions {
		if vers == nil {
			vers = []uint16{0x0304}
		}
		add(extSupportedVersions)
	}
	var extBytes []byte
	for _, t := range exts {
		var body []byte
		switch t {
		case extServerName:
			name := []byte("example.com")
			entry := append([]byte{0}, vec16(nil, name)...)
			body = vec16(nil, entry)
		case extALPN:
			var names []byte
			for _, a := range hb.alpn {
				names = append(append(names, byte(len(a))), a...)
			}
			body = vec16(nil, names)
		case extSignatureAlgorithms:
			body = vec16(nil, list(hb.sigs))
		case extSupportedGroups:
			body = vec16(nil, list(hb.groups))
		case extSupportedVersions:
			l := list(vers)
			body = append([]byte{byte(len(l))}, l...)
		}
		extBytes = vec16(u16(extBytes, t), body)
	}
	legacy := hb.legacy
	if legacy == 0 {
		legacy = 0x0303
	}
	body := u16(nil, legacy)
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = vec16(body, list(hb.ciphers))
	body = append(body, 1, 0) // compression: null
	body = vec16(body, extBytes)
	msg := append([]byte{handshakeClientHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	rec := []byte{contentTypeHandshake, 0x03, 0x01}
	return vec16(rec, msg)
}

// TestIsFingerprint: the shape IsFingerprint accepts is the shape JA4
// computes, and nothing a header could carry besides.
func TestIsFingerprint(t *testing.T) {
	for s, want := range map[string]bool{
		"t13d1517h2_8daaf6152771_cb7bf5808d99":  true,
		"q13d0310h3_55b375c5d22e_cd85d2d88918":  true,
		"t12i01023d_000000000000_000000000000":  true,
		"T13d1517h2_8daaf6152771_cb7bf5808d99":  false,
		"t14d1517h2_8daaf6152771_cb7bf5808d99":  false,
		"t13x1517h2_8daaf6152771_cb7bf5808d99":  false,
		"t13d15a7h2_8daaf6152771_cb7bf5808d99":  false,
		"t13d1517h-_8daaf6152771_cb7bf5808d99":  false,
		"t13d1517h2_8DAAF6152771_cb7bf5808d99":  false,
		"t13d1517h2-8daaf6152771_cb7bf5808d99":  false,
		"t13d1517h2_8daaf6152771_cb7bf5808d9":   false,
		"t13d1517h2_8daaf6152771_cb7bf5808d99x": false,
		"t13d1517h2_8daaf6152771_cb7bf5808d9g":  false,
		"":                                      false,
	} {
		if IsFingerprint(s) != want || want != shapeOK(s) {
			t.Errorf("IsFingerprint(%q) = %v, want %v (shape %v)", s, !want, want, shapeOK(s))
		}
	}
}
