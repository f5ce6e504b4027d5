package agents

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxRangesSize is the largest input LoadRanges accepts, in bytes. The
// largest list published by a crawler operator today (Ahrefs, about 10,000
// addresses) is well under 1 MiB as CSV.
const MaxRangesSize = 32 << 20

// ErrNoPrefixes is returned (wrapped) by LoadRanges when the input is well
// formed but holds no prefix at all. An empty list is almost always a failed
// download, and treating it as "this operator has no addresses" would make
// every request claiming that crawler look spoofed.
var ErrNoPrefixes = errors.New("no prefixes found")

// LoadRanges reads a list of IP prefixes in any of the formats crawler
// operators and list mirrors publish, detected from the content:
//
//   - JSON objects with a "prefixes" array, whose elements are objects with
//     an "ipv4Prefix" or "ipv6Prefix" member (Google's format, also used by
//     OpenAI, Perplexity, Bing, Apple and DuckDuckGo) or plain strings;
//   - the same shape as the IETF draft "A JSON-Based Format for Publishing
//     IP Ranges of Automated HTTP Clients" (draft-illyes-webbotauth-jafar)
//     writes it, recognised by a "formatVersion" or "synctoken" member: a
//     prefix object with both or neither address member is skipped, as the
//     draft says, and a formatVersion whose major number is above 1 is an
//     error;
//   - CSV whose first column is a prefix or a single address, with or
//     without a header row (sefinek/known-bots-ip-whitelist's "IP,Name,Sources");
//     lines starting with '#' are comments;
//   - plain text with one prefix or address per line; blank lines and
//     everything after a '#' are ignored.
//
// A single address stands for a /32 (IPv4) or /128 (IPv6) prefix. Prefixes
// are returned masked (192.0.2.1/24 becomes 192.0.2.0/24) and IPv4-mapped
// IPv6 addresses are turned into IPv4. Errors name the line or element at
// fault; input larger than MaxRangesSize or without any prefix is an error.
// ParseRangeList does the same and also returns the list's metadata.
func LoadRanges(r io.Reader) ([]netip.Prefix, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxRangesSize+1))
	if err != nil {
		return nil, fmt.Errorf("agents: reading IP ranges: %w", err)
	}
	l, err := ParseRangeList(data)
	if err != nil {
		return nil, err
	}
	return l.Prefixes, nil
}

// RangeList is a parsed IP list with the metadata its publisher gave.
type RangeList struct {
	// Prefixes are the list's prefixes, masked, in the order given.
	Prefixes []netip.Prefix
	// CreationTime is the JSON "creationTime" member in UTC; zero when the
	// list has none (CSV, plain text) or it cannot be read as a time.
	CreationTime time.Time
	// SyncToken is the JSON "synctoken" member (IETF draft), if any.
	SyncToken string
	// FormatVersion is the JSON "formatVersion" member (IETF draft), if any.
	FormatVersion string
}

// ParseRangeList parses data as LoadRanges does (same formats, same
// errors, same MaxRangesSize limit) and returns the prefixes with the
// list's metadata.
func ParseRangeList(data []byte) (RangeList, error) {
	if len(data) > MaxRangesSize {
		return RangeList{}, fmt.Errorf("agents: reading IP ranges: input larger than %d bytes", MaxRangesSize)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	var l RangeList
	var err error
	switch format := detectFormat(data); format {
	case "json":
		l, err = parseJSONRanges(data)
	case "csv":
		l.Prefixes, err = parseCSVRanges(data)
	default:
		l.Prefixes, err = parsePlainRanges(data)
	}
	if err != nil {
		return RangeList{}, fmt.Errorf("agents: reading IP ranges: %w", err)
	}
	if len(l.Prefixes) == 0 {
		return RangeList{}, fmt.Errorf("agents: reading IP ranges: %w", ErrNoPrefixes)
	}
	return l, nil
}

// LoadRangesFile is LoadRanges on the named file; errors name the file.
func LoadRangesFile(path string) ([]netip.Prefix, error) {
	p, _, err := LoadRangesFileAsOf(path)
	return p, err
}

// LoadRangesFileAsOf is LoadRangesFile, and also returns the date of the
// list, which decides whether it may still prove a spoof
// (VerifierConfig.MaxListAge): its JSON creationTime, else the file's
// modification time, and never later than that modification time (a list
// is no newer than the file that holds it). A list kept as a file is
// otherwise as old as the day it was written: reading it again does not
// make it current.
func LoadRangesFileAsOf(path string) ([]netip.Prefix, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("agents: IP ranges: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("agents: IP ranges: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRangesSize+1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: agents: reading IP ranges: %w", path, err)
	}
	l, err := ParseRangeList(data)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := CheckCoverage(l.Prefixes); err != nil {
		return nil, time.Time{}, fmt.Errorf("agents: IP ranges %s: %w", path, err)
	}
	asOf := info.ModTime().UTC()
	if !l.CreationTime.IsZero() && l.CreationTime.Before(asOf) {
		asOf = l.CreationTime
	}
	return l.Prefixes, asOf, nil
}

// detectFormat looks at the first byte that is not white space and the
// first line that is neither blank nor a comment.
func detectFormat(data []byte) string {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return "json"
	}
	sc := bufio.NewScanner(bytes.NewReader(trimmed))
	sc.Buffer(nil, len(trimmed)+1)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if strings.Contains(line, ",") {
			return "csv"
		}
		return "plain"
	}
	return "plain"
}

// jsonRanges is the envelope of the JSON formats. Elements are decoded one
// by one so that an error can name the element.
type jsonRanges struct {
	CreationTime  string            `json:"creationTime"`
	SyncToken     *string           `json:"synctoken"`
	FormatVersion *json.RawMessage  `json:"formatVersion"`
	Prefixes      []json.RawMessage `json:"prefixes"`
}

type jsonPrefix struct {
	IPv4 string `json:"ipv4Prefix"`
	IPv6 string `json:"ipv6Prefix"`
}

// maxDraftMajor is the highest major formatVersion of the IETF draft's
// format this parser understands.
const maxDraftMajor = 1

func parseJSONRanges(data []byte) (RangeList, error) {
	var l RangeList
	var raw []json.RawMessage
	draft := false
	if bytes.TrimLeft(data, " \t\r\n")[0] == '[' {
		// A bare array of strings or of {"ipv4Prefix": ...} objects.
		if err := json.Unmarshal(data, &raw); err != nil {
			return l, fmt.Errorf("JSON: %w", err)
		}
	} else {
		var env jsonRanges
		if err := json.Unmarshal(data, &env); err != nil {
			return l, fmt.Errorf("JSON: %w", err)
		}
		if env.SyncToken != nil {
			draft = true
			l.SyncToken = *env.SyncToken
		}
		if env.FormatVersion != nil {
			draft = true
			v, err := draftVersion(*env.FormatVersion)
			if err != nil {
				return l, err
			}
			l.FormatVersion = v
		}
		if env.Prefixes == nil {
			return l, errors.New(`JSON: no "prefixes" array`)
		}
		raw = env.Prefixes
		l.CreationTime = parseCreationTime(env.CreationTime)
	}
	out := make([]netip.Prefix, 0, len(raw))
	for i, el := range raw {
		var s string
		if len(el) > 0 && el[0] == '"' {
			if err := json.Unmarshal(el, &s); err != nil {
				return l, fmt.Errorf("JSON prefixes[%d]: %w", i, err)
			}
		} else {
			var jp jsonPrefix
			if err := json.Unmarshal(el, &jp); err != nil {
				return l, fmt.Errorf("JSON prefixes[%d]: %w", i, err)
			}
			switch {
			case jp.IPv4 != "" && jp.IPv6 != "":
				if draft {
					continue // the draft: "invalid and MUST be ignored"
				}
				return l, fmt.Errorf("JSON prefixes[%d]: both ipv4Prefix and ipv6Prefix", i)
			case jp.IPv4 != "":
				s = jp.IPv4
			case jp.IPv6 != "":
				s = jp.IPv6
			default:
				if draft {
					continue
				}
				return l, fmt.Errorf("JSON prefixes[%d]: no ipv4Prefix or ipv6Prefix", i)
			}
		}
		p, err := parsePrefixOrAddr(s)
		if err != nil {
			return l, fmt.Errorf("JSON prefixes[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	l.Prefixes = out
	return l, nil
}

// draftVersion reads a formatVersion ("1.0", or a bare number) and refuses
// a major version this parser does not know.
func draftVersion(raw json.RawMessage) (string, error) {
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", fmt.Errorf("JSON formatVersion: %w", err)
		}
		v = n.String()
	}
	if err := CheckFormatVersion(v); err != nil {
		return "", err
	}
	return v, nil
}

// CheckFormatVersion checks a version of the IETF draft's format
// ("major.minor", as in a formatVersion member or the version parameter of
// application/jafar+json): a major version above the one this package
// understands is an error, since the draft says such a file must not be
// parsed. An empty version is accepted.
func CheckFormatVersion(v string) error {
	if v == "" {
		return nil
	}
	majorText, _, _ := strings.Cut(v, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil || major < 0 {
		return fmt.Errorf("JSON formatVersion %q is not major.minor", v)
	}
	if major > maxDraftMajor {
		return fmt.Errorf("JSON formatVersion %q: major version above %d is not understood", v, maxDraftMajor)
	}
	return nil
}

// parseCreationTime reads the creationTime forms operators use: RFC 3339
// (the IETF draft) or Google's "2006-01-02T15:04:05.999999" without a zone,
// which is UTC. Anything else gives the zero time.
func parseCreationTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

func parseCSVRanges(data []byte) ([]netip.Prefix, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.Comment = '#'
	r.LazyQuotes = true
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	var out []netip.Prefix
	for first := true; ; first = false {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("CSV: %w", err)
		}
		line, _ := r.FieldPos(0)
		field := strings.TrimSpace(rec[0])
		if field == "" {
			continue
		}
		p, err := parsePrefixOrAddr(field)
		if err != nil {
			if first && !strings.ContainsAny(field, ".:") {
				continue // a header row such as "IP,Name,Sources"
			}
			return nil, fmt.Errorf("CSV line %d: %w", line, err)
		}
		out = append(out, p)
	}
}

func parsePlainRanges(data []byte) ([]netip.Prefix, error) {
	var out []netip.Prefix
	line := 0
	for rest := data; len(rest) > 0; {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\n"))
		line++
		if i := bytes.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		fields := strings.Fields(string(l))
		if len(fields) == 0 {
			continue
		}
		p, err := parsePrefixOrAddr(fields[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePrefixOrAddr parses "192.0.2.0/24", "2001:db8::/32" or a single
// address, returning a masked prefix with IPv4-mapped addresses unmapped.
func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		p, err = netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad prefix %q: %w", s, err)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad address %q: %w", s, err)
		}
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("bad address %q: zones are not allowed", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return normalizePrefix(p), nil
}

// normalizePrefix masks p and turns an IPv4-mapped IPv6 prefix of at
// least 96 bits into the IPv4 prefix it stands for.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// PrefixSet is an immutable set of IP prefixes with a fast membership test.
// The prefixes are merged into disjoint, sorted address ranges (one array
// for IPv4, one for IPv6) searched by binary search, so Contains costs
// O(log n) comparisons and never allocates. The zero value and nil are
// empty sets. A PrefixSet is safe for concurrent use.
type PrefixSet struct {
	// Disjoint, sorted, non-adjacent ranges; the bounds are kept in separate
	// arrays so that the binary search reads only the lower bounds.
	v4lo, v4hi []uint32
	v6lo, v6hi []u128
}

type range4 struct{ lo, hi uint32 }

// u128 is an IPv6 address as a 128-bit unsigned integer.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) next() (u128, bool) {
	lo := a.lo + 1
	hi := a.hi
	if lo == 0 {
		hi++
		if hi == 0 {
			return u128{}, false
		}
	}
	return u128{hi, lo}, true
}

type range6 struct{ lo, hi u128 }

// NewPrefixSet builds a PrefixSet holding the given prefixes. Invalid
// prefixes are skipped; overlapping and adjacent prefixes are merged; the
// argument is not retained.
func NewPrefixSet(prefixes []netip.Prefix) *PrefixSet {
	var v4 []range4
	var v6 []range6
	for _, p := range prefixes {
		if !p.IsValid() {
			continue
		}
		p = normalizePrefix(p)
		if p.Addr().Is4() {
			a := p.Addr().As4()
			lo := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
			hi := lo | uint32(uint64(1)<<(32-p.Bits())-1)
			v4 = append(v4, range4{lo, hi})
		} else {
			lo := addr128(p.Addr())
			host := 128 - p.Bits()
			hi := lo
			switch {
			case host >= 64:
				hi.lo = ^uint64(0)
				hi.hi |= uint64(1)<<(host-64) - 1
				if host == 128 {
					hi.hi = ^uint64(0)
				}
			default:
				hi.lo |= uint64(1)<<host - 1
			}
			v6 = append(v6, range6{lo, hi})
		}
	}
	s := &PrefixSet{}
	for _, r := range merge4(v4) {
		s.v4lo = append(s.v4lo, r.lo)
		s.v4hi = append(s.v4hi, r.hi)
	}
	for _, r := range merge6(v6) {
		s.v6lo = append(s.v6lo, r.lo)
		s.v6hi = append(s.v6hi, r.hi)
	}
	return s
}

func addr128(a netip.Addr) u128 {
	b := a.As16()
	var u u128
	for i := range 8 {
		u.hi = u.hi<<8 | uint64(b[i])
		u.lo = u.lo<<8 | uint64(b[8+i])
	}
	return u
}

func merge4(rs []range4) []range4 {
	slices.SortFunc(rs, func(a, b range4) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1].hi == ^uint32(0) || r.lo <= out[n-1].hi+1) {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

func merge6(rs []range6) []range6 {
	slices.SortFunc(rs, func(a, b range6) int {
		switch {
		case a.lo.less(b.lo):
			return -1
		case b.lo.less(a.lo):
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			next, ok := last.hi.next()
			if !ok || !next.less(r.lo) { // overlapping or adjacent
				if last.hi.less(r.hi) {
					last.hi = r.hi
				}
				continue
			}
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// Contains reports whether ip lies in one of the set's prefixes. An
// IPv4-mapped IPv6 address (::ffff:192.0.2.1) is looked up as IPv4; zones
// are ignored.
func (s *PrefixSet) Contains(ip netip.Addr) bool {
	if s == nil {
		return false
	}
	if ip.Is4() || ip.Is4In6() {
		b := ip.As16()
		x := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
		lo := s.v4lo
		// Find the last range with lo <= x.
		i, j := 0, len(lo)
		for i < j {
			h := int(uint(i+j) >> 1)
			if lo[h] <= x {
				i = h + 1
			} else {
				j = h
			}
		}
		return i > 0 && x <= s.v4hi[i-1]
	}
	if !ip.Is6() {
		return false
	}
	x := addr128(ip)
	lo := s.v6lo
	i, j := 0, len(lo)
	for i < j {
		h := int(uint(i+j) >> 1)
		if lo[h].hi < x.hi || (lo[h].hi == x.hi && lo[h].lo <= x.lo) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i > 0 && !s.v6hi[i-1].less(x)
}

// Len returns the number of disjoint address ranges the set holds after
// merging; it is at most the number of prefixes it was built from.
func (s *PrefixSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.v4lo) + len(s.v6lo)
}

// hasFamily reports whether the set holds any range of ip's family.
func (s *PrefixSet) hasFamily(ip netip.Addr) bool {
	if s == nil {
		return false
	}
	if ip.Is4() || ip.Is4In6() {
		return len(s.v4lo) > 0
	}
	return len(s.v6lo) > 0
}

// Bounds of what a crawler's IP list may cover. The largest lists crawler
// operators publish today cover about 531,000 IPv4 addresses (Meta's,
// roughly a /13) and 2^35 IPv6 /64 networks (Yandex's, a /29); the bounds
// leave about thirty times that, while refusing lists that would verify
// anyone (0.0.0.0/0, or all of IPv4 as 256 /8s).
const (
	// MaxListIPv4 is the most IPv4 addresses a list may cover in all: a /8.
	MaxListIPv4 = 1 << 24
	// MaxListIPv6 is the most IPv6 /64 networks a list may cover in all:
	// a /24.
	MaxListIPv6 = 1 << 40
	// minPrefixBits4 and minPrefixBits6 bound one prefix: no crawler
	// operator publishes anything broader.
	minPrefixBits4 = 8
	minPrefixBits6 = 16
)

// CheckCoverage refuses a list that no crawler operator would publish: a
// prefix broader than /8 (IPv6 /16), or prefixes that together cover more
// than MaxListIPv4 addresses or MaxListIPv6 /64 networks (overlaps counted
// once). One such list would make every claim of its crawler Verified.
func CheckCoverage(ps []netip.Prefix) error {
	sorted := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		p = p.Masked()
		if (p.Addr().Is4() && p.Bits() < minPrefixBits4) || (p.Addr().Is6() && p.Bits() < minPrefixBits6) {
			return fmt.Errorf("prefix %s is too broad for a crawler list", p)
		}
		sorted = append(sorted, p)
	}
	// Prefixes are nested or disjoint: sorted by address, shortest first,
	// each one is either inside the last one kept or after it.
	slices.SortFunc(sorted, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var v4, v6 uint64
	var last netip.Prefix
	for _, p := range sorted {
		if last.IsValid() && last.Addr().BitLen() == p.Addr().BitLen() && last.Contains(p.Addr()) && last.Bits() <= p.Bits() {
			continue
		}
		last = p
		if p.Addr().Is4() {
			v4 += 1 << (32 - p.Bits())
		} else {
			v6 += 1 << max(64-p.Bits(), 0)
		}
	}
	if v4 > MaxListIPv4 {
		return fmt.Errorf("the list covers %d IPv4 addresses, more than any crawler operator publishes (at most %d, a /8)", v4, MaxListIPv4)
	}
	if v6 > MaxListIPv6 {
		return fmt.Errorf("the list covers %d IPv6 /64 networks, more than any crawler operator publishes (at most %d, a /24)", v6, uint64(MaxListIPv6))
	}
	return nil
}
