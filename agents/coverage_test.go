package agents

import (
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"testing"
)

// TestCheckCoverage: a list may not verify the whole Internet, whether by
// one broad prefix or by many narrower ones; real operators' lists pass.
func TestCheckCoverage(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	var all4 []string
	for i := range 256 {
		all4 = append(all4, fmt.Sprintf("%d.0.0.0/8", i))
	}
	var nested []string // a /8 and everything inside it: counted once
	nested = append(nested, "10.0.0.0/8")
	for i := range 200 {
		nested = append(nested, fmt.Sprintf("10.%d.0.0/16", i))
	}
	for _, tc := range []struct {
		name string
		list []netip.Prefix
		want string // "" for accepted
	}{
		{"one /24", pfx("66.249.64.0/24"), ""},
		{"a /8 in all", pfx("10.0.0.0/9", "10.128.0.0/9"), ""},
		{"nested prefixes count once", pfx(nested...), ""},
		{"0.0.0.0/0", pfx("0.0.0.0/0"), "too broad"},
		{"::/0", pfx("::/0"), "too broad"},
		{"all of IPv4 as /8s", pfx(all4...), "IPv4 addresses"},
		{"two /8s", pfx("10.0.0.0/8", "11.0.0.0/8"), "IPv4 addresses"},
		{"IPv6 over a /24", pfx("2001:d00::/24", "2001:e00::/24"), "IPv6 /64 networks"},
		{"IPv6 a /24", pfx("2001:d00::/25", "2001:d80::/25"), ""},
	} {
		err := CheckCoverage(tc.list)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
	// Every list an operator publishes (the embedded snapshot) passes.
	n := 0
	err := fs.WalkDir(ipsFS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".csv")) {
			return err
		}
		data, err := fs.ReadFile(ipsFS, path)
		if err != nil {
			return err
		}
		l, err := ParseRangeList(data)
		if err != nil {
			return nil // not a list (sources.json)
		}
		n++
		if err := CheckCoverage(l.Prefixes); err != nil {
			t.Errorf("embedded list %s: %v", path, err)
		}
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("embedded lists: %d read, %v", n, err)
	}
}
