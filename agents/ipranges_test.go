package agents

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLoadRangesEmbeddedFiles(t *testing.T) {
	// Prefix counts of the snapshot, as given in the data README (CIDRs,
	// IPv6 in brackets) and Google's files.
	want := map[string][2]int{ // total, IPv6
		"google/googlebot.json":                      {315, 146},
		"google/special-crawlers.json":               {270, 135},
		"google/user-triggered-fetchers.json":        {1056, 528},
		"sefinek/gptbot.csv":                         {21, 0},
		"sefinek/oai-searchbot.csv":                  {35, 0},
		"sefinek/chatgpt-user.csv":                   {240, 0},
		"sefinek/perplexitybot.csv":                  {8, 0},
		"sefinek/perplexity-user.csv":                {4, 0},
		"sefinek/claudebot.csv":                      {20, 0},
		"sefinek/applebot.csv":                       {12, 0},
		"sefinek/bingbot.csv":                        {28, 0},
		"sefinek/duckduckbot.csv":                    {319, 0},
		"sefinek/yandexbot.csv":                      {16, 1},
		"sefinek/ahrefsbot.csv":                      {9870, 0},
		"sefinek/google-user-triggered-fetchers.csv": {1490, 745},
		"sefinek/facebookbot.csv":                    {1041, 628},
		"sefinek/semrush.csv":                        {7, 0},
	}
	seen := 0
	err := fs.WalkDir(ipsFS, "data/ips", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".csv")) || strings.HasSuffix(path, "sources.json") {
			return err
		}
		name := strings.TrimPrefix(path, "data/ips/")
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected list %s", name)
			return nil
		}
		seen++
		prefixes, err := LoadRangesFile(filepath.FromSlash(path))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return nil
		}
		v6 := 0
		for _, p := range prefixes {
			if !p.IsValid() || p != p.Masked() {
				t.Errorf("%s: bad prefix %v", name, p)
			}
			if p.Addr().Is6() {
				v6++
			}
		}
		if len(prefixes) != w[0] || v6 != w[1] {
			t.Errorf("%s: %d prefixes (%d IPv6), want %d (%d)", name, len(prefixes), v6, w[0], w[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(want) {
		t.Errorf("saw %d lists, want %d", seen, len(want))
	}
	// sources.json is a configuration file, not a list: it must be refused
	// with a clear error rather than misread.
	if _, err := LoadRangesFile("data/ips/sefinek/sources.json"); err == nil {
		t.Error("sources.json loaded as a list")
	}
}

func TestLoadRangesFormats(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"google json", `{"creationTime": "2026-08-20T14:46:45.000000", "prefixes": [
			{"ipv6Prefix": "2001:4860:4801:10::/64"}, {"ipv4Prefix": "66.249.64.0/27"}]}`,
			[]string{"2001:4860:4801:10::/64", "66.249.64.0/27"}},
		{"openai json", `{"creationTime":"2026-05-04T00:00:00.000000","prefixes":[{"ipv4Prefix":"4.227.36.0/25"}]}`,
			[]string{"4.227.36.0/25"}},
		{"json strings", `{"prefixes": ["192.0.2.0/24", "2001:db8::1"]}`,
			[]string{"192.0.2.0/24", "2001:db8::1/128"}},
		{"json array", `["192.0.2.1", {"ipv4Prefix": "198.51.100.0/24"}]`,
			[]string{"192.0.2.1/32", "198.51.100.0/24"}},
		{"json with BOM", "\ufeff{\"prefixes\":[{\"ipv4Prefix\":\"192.0.2.0/24\"}]}",
			[]string{"192.0.2.0/24"}},
		{"sefinek csv", "IP,Name,Sources\n4.227.36.0/25,GPTBot,https://openai.com/gptbot.json\n5.39.1.224,AhrefsBot,https://a|https://b\n",
			[]string{"4.227.36.0/25", "5.39.1.224/32"}},
		{"csv without header, CRLF, quotes", "\"192.0.2.0/24\",x\r\n198.51.100.7,\"a, b\"\r\n",
			[]string{"192.0.2.0/24", "198.51.100.7/32"}},
		{"csv comments", "# list\nIP,Name\n192.0.2.0/24,x\n",
			[]string{"192.0.2.0/24"}},
		{"plain", "# OpenAI\n192.0.2.0/24\n\n  2001:db8::/32   # docs\n198.51.100.9\n",
			[]string{"192.0.2.0/24", "2001:db8::/32", "198.51.100.9/32"}},
		{"plain with a comma in a comment", "192.0.2.0/24 # a, b\n198.51.100.0/24\n",
			[]string{"192.0.2.0/24", "198.51.100.0/24"}},
		{"plain unmasked and mapped", "192.0.2.77/24\n::ffff:198.51.100.0/120\n",
			[]string{"192.0.2.0/24", "198.51.100.0/24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadRanges(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("LoadRanges: %v", err)
			}
			var gs []string
			for _, p := range got {
				gs = append(gs, p.String())
			}
			if strings.Join(gs, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %v, want %v", gs, tt.want)
			}
		})
	}
}

func TestLoadRangesErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "no prefixes found"},
		{"comments only", "# nothing\n\n", "no prefixes found"},
		{"header only", "IP,Name,Sources\n", "no prefixes found"},
		{"json empty", `{"prefixes": []}`, "no prefixes found"},
		{"json broken", `{"prefixes": [`, "JSON: unexpected end"},
		{"json no prefixes", `{"syncToken": "1"}`, `no "prefixes" array`},
		{"json wrong type", `{"prefixes": {"a": 1}}`, "JSON: json: cannot unmarshal"},
		{"json element", `{"prefixes": [{"ipv4Prefix": "192.0.2.0/24"}, {"ipPrefix": "x"}]}`, "JSON prefixes[1]: no ipv4Prefix or ipv6Prefix"},
		{"json both", `{"prefixes": [{"ipv4Prefix": "192.0.2.0/24", "ipv6Prefix": "::/0"}]}`, "both ipv4Prefix and ipv6Prefix"},
		{"json bad prefix", `{"prefixes": [{"ipv4Prefix": "192.0.2.0/33"}]}`, `JSON prefixes[0]: bad prefix "192.0.2.0/33"`},
		{"json element type", `{"prefixes": [42]}`, "JSON prefixes[0]: json: cannot unmarshal number"},
		{"csv bad row", "IP,Name\n192.0.2.0/24,a\nnot-an-ip,b\n", `CSV line 3: bad address "not-an-ip"`},
		{"csv bad quotes", "192.0.2.0/24,a\n\"x\"y\"z,b\n", "CSV line 2: bad address"},
		{"csv bad first row", "192.0.2.300,a\n192.0.2.0/24,b\n", `CSV line 1: bad address "192.0.2.300"`},
		{"plain bad line", "192.0.2.0/24\n192.0.2.0/40\n", `line 2: bad prefix "192.0.2.0/40"`},
		{"zone", "fe80::1%eth0\n", "zones are not allowed"},
		{"garbage", "\x00\x01\x02", "line 1: bad address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadRanges(strings.NewReader(tt.in))
			if err == nil {
				t.Fatalf("no error; got %v", got)
			}
			if !strings.HasPrefix(err.Error(), "agents: reading IP ranges: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := LoadRanges(strings.NewReader("")); !errors.Is(err, ErrNoPrefixes) {
		t.Errorf("empty input: %v is not ErrNoPrefixes", err)
	}
	rerr := errors.New("disk on fire")
	if _, err := LoadRanges(iotest.ErrReader(rerr)); !errors.Is(err, rerr) {
		t.Errorf("read error not wrapped: %v", err)
	}
	if _, err := LoadRanges(strings.NewReader(strings.Repeat("#", MaxRangesSize+1))); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized input: %v", err)
	}
	_, err := LoadRangesFile("testdata/does-not-exist.txt")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "does-not-exist.txt") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("192.0.2.0/24\nnope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRangesFile(bad); err == nil || !strings.Contains(err.Error(), bad+": agents: reading IP ranges: line 2") {
		t.Errorf("bad file: %v", err)
	}
}

func TestPrefixSetEdges(t *testing.T) {
	mp := netip.MustParsePrefix
	ma := netip.MustParseAddr
	var nilSet *PrefixSet
	if nilSet.Contains(ma("192.0.2.1")) || nilSet.Len() != 0 || (&PrefixSet{}).Contains(ma("::1")) {
		t.Error("empty sets contain something")
	}
	all := NewPrefixSet([]netip.Prefix{mp("0.0.0.0/0"), mp("::/0"), mp("10.0.0.0/8")})
	for _, a := range []string{"0.0.0.0", "255.255.255.255", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:1.2.3.4"} {
		if !all.Contains(ma(a)) {
			t.Errorf("/0 does not contain %s", a)
		}
	}
	if all.Len() != 2 {
		t.Errorf("/0 sets: %d ranges", all.Len())
	}
	s := NewPrefixSet([]netip.Prefix{
		mp("192.0.2.0/25"), mp("192.0.2.128/25"), // adjacent: merged
		mp("198.51.100.7/32"),
		mp("255.255.255.255/32"),
		mp("2001:db8::/64"), mp("2001:db8:0:1::/64"), // adjacent across a /64: merged
		mp("2001:db8::5/128"), // inside
		mp("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"),
		mp("2001:db8:8000::/33"),
		{}, // invalid: skipped
	})
	if s.Len() != 6 {
		t.Errorf("Len = %d, want 6", s.Len())
	}
	for a, want := range map[string]bool{
		"192.0.1.255": false, "192.0.2.0": true, "192.0.2.255": true, "192.0.3.0": false,
		"198.51.100.6": false, "198.51.100.7": true, "198.51.100.8": false,
		"255.255.255.255": true, "255.255.255.254": false,
		"::ffff:198.51.100.7": true, "::c633:6407": false, // IPv4-compatible is not IPv4
		"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff": false, "2001:db8::": true,
		"2001:db8:0:1:ffff:ffff:ffff:ffff": true, "2001:db8:0:2::": false,
		"2001:db8:7fff:ffff:ffff:ffff:ffff:ffff": false, "2001:db8:8000::": true, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff": true,
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe": false, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff": true,
		"fe80::1%eth0": false,
	} {
		if got := s.Contains(ma(a)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", a, got, want)
		}
	}
	if s.Contains(netip.Addr{}) {
		t.Error("zero Addr contained")
	}
}

func TestPrefixSetRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var ps []netip.Prefix
		n := 1 + r.IntN(200)
		for range n {
			ps = append(ps, randomPrefix(r, round%2 == 0))
		}
		s := NewPrefixSet(ps)
		for range 2000 {
			var a netip.Addr
			if r.IntN(2) == 0 {
				// Near a prefix boundary.
				p := ps[r.IntN(len(ps))]
				a = p.Addr()
				if r.IntN(2) == 0 {
					a = prefixLastAddr(p)
				}
				switch r.IntN(3) {
				case 0:
					a = a.Prev()
				case 1:
					a = a.Next()
				}
				if !a.IsValid() {
					continue
				}
			} else {
				a = randomPrefix(r, round%2 == 0).Addr()
			}
			want := false
			for _, p := range ps {
				if p.Contains(a) {
					want = true
					break
				}
			}
			if got := s.Contains(a); got != want {
				t.Fatalf("round %d: Contains(%s) = %v, want %v", round, a, got, want)
			}
		}
	}
}

// randomPrefix returns a random prefix, clustered so prefixes overlap.
func randomPrefix(r *rand.Rand, v4 bool) netip.Prefix {
	if v4 {
		a := netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
		return netip.PrefixFrom(a, 14+r.IntN(19)).Masked()
	}
	var b [16]byte
	b[0], b[1] = 0x20, 0x01
	b[7] = byte(r.IntN(4))
	for i := 8; i < 16; i++ {
		b[i] = byte(r.IntN(256))
	}
	if r.IntN(4) == 0 {
		b[15] = 0xff
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), 50+r.IntN(79)).Masked()
}

// tenThousandPrefixes is ahrefsbot.csv (9,870 addresses) plus synthetic
// IPv4 /24s and IPv6 /48s up to 10,000 prefixes.
func tenThousandPrefixes(tb testing.TB) []netip.Prefix {
	ps, err := LoadRangesFile("data/ips/sefinek/ahrefsbot.csv")
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; len(ps) < 10000; i++ {
		if i%2 == 0 {
			ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, byte(i), 0}), 24))
		} else {
			var b [16]byte
			b[0], b[1], b[2], b[3], b[4], b[5] = 0x20, 0x01, 0x0d, 0xb8, byte(i>>8), byte(i)
			ps = append(ps, netip.PrefixFrom(netip.AddrFrom16(b), 48))
		}
	}
	return ps
}

func TestPrefixSetContainsBothFamilies(t *testing.T) {
	ps := tenThousandPrefixes(t)
	s := NewPrefixSet(ps)
	a4, a6 := netip.MustParseAddr("5.39.1.224"), netip.MustParseAddr("2001:db8:1::1")
	if !s.Contains(a4) || !s.Contains(a6) {
		t.Fatal("addresses missing")
	}
}

func BenchmarkPrefixSetContains(b *testing.B) {
	ps := tenThousandPrefixes(b)
	s := NewPrefixSet(ps)
	b.Logf("%d prefixes, %d ranges after merging", len(ps), s.Len())
	// Addresses in and out of the set, both families, cycled.
	var addrs []netip.Addr
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1024 {
		p := ps[r.IntN(len(ps))]
		a := p.Addr()
		if i%2 == 1 {
			a = a.Prev() // mostly outside
		}
		addrs = append(addrs, a)
	}
	b.Run("mixed", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.Contains(addrs[i&1023])
			i++
		}
	})
	for _, name := range []string{"5.39.1.224", "203.0.113.9", "2001:db8:10::1", "2001:db9::1"} {
		a := netip.MustParseAddr(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Contains(a)
			}
		})
	}
}

func FuzzLoadRanges(f *testing.F) {
	for _, seed := range []string{
		`{"creationTime": "x", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}, {"ipv6Prefix": "2001:db8::/32"}]}`,
		`{"prefixes": ["192.0.2.1"]}`,
		`["::1", {"ipv6Prefix": "::/0"}]`,
		"IP,Name,Sources\n192.0.2.0/24,x,https://a|https://b\n",
		"# c\n192.0.2.0/24\n2001:db8::1 # x\n",
		"\"a,b\n",
		"::ffff:1.2.3.4/100\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := LoadRanges(strings.NewReader(string(data)))
		if err != nil {
			if len(ps) != 0 || !strings.HasPrefix(err.Error(), "agents: reading IP ranges: ") {
				t.Fatalf("error %v with %d prefixes", err, len(ps))
			}
			return
		}
		if len(ps) == 0 {
			t.Fatal("no error and no prefixes")
		}
		s := NewPrefixSet(ps)
		for _, p := range ps {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("bad prefix %v", p)
			}
			if !s.Contains(p.Addr()) || !s.Contains(prefixLastAddr(p)) {
				t.Fatalf("set misses %v", p)
			}
		}
	})
}

// BenchmarkPrefixSetContainsDisjoint is the worst case: 10,000 prefixes of
// one family that merging cannot reduce.
func BenchmarkPrefixSetContainsDisjoint(b *testing.B) {
	for _, family := range []string{"v4", "v6"} {
		var ps []netip.Prefix
		for i := range 10000 {
			if family == "v4" {
				x := uint32(10<<24) + uint32(i)*64
				ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}), 29))
			} else {
				var a [16]byte
				a[0], a[1], a[2], a[3] = 0x20, 0x01, 0x0d, 0xb8
				a[6], a[7] = byte(i>>7), byte(i<<1)
				ps = append(ps, netip.PrefixFrom(netip.AddrFrom16(a), 64))
			}
		}
		s := NewPrefixSet(ps)
		if s.Len() != 10000 {
			b.Fatalf("%s: %d ranges", family, s.Len())
		}
		r := rand.New(rand.NewPCG(5, 6))
		addrs := make([]netip.Addr, 1024)
		for i := range addrs {
			p := ps[r.IntN(len(ps))]
			addrs[i] = p.Addr()
			if i%2 == 1 {
				addrs[i] = prefixLastAddr(p).Next() // just outside
			}
		}
		b.Run(family, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Contains(addrs[i&1023])
				i++
			}
		})
	}
}
