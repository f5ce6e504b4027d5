// Package ja4 reads a TLS ClientHello and computes its JA4 TLS client
// fingerprint, as FoxIO's JA4 specification defines it
// (https://github.com/FoxIO-LLC/ja4/blob/main/technical_details/JA4.md; JA4
// TLS client fingerprinting is BSD-3-Clause licensed, see NOTICE).
//
// A ClientHello is chosen by the client's TLS library, not by the script
// using it: an HTTP library can forge every header of a browser but not,
// without becoming a browser or an impersonation tool, the handshake of
// BoringSSL or NSS. The package exposes the fingerprint and the structural
// facts it rests on (GREASE, extension set, ALPN, groups, signature
// algorithms), so that a caller can judge an engine by facts that hold across
// its releases rather than by hashes that change with each.
//
// Parsing is bounded: one TLS record of at most MaxRecordLen bytes, every
// length checked against the bytes present, work linear in the input. Bad
// input gets an error wrapping ErrTruncated or ErrMalformed, never a panic.
//
// The package imports nothing but the standard library.
package ja4

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
)

// Record layout limits (RFC 8446 section 5.1).
const (
	// RecordHeaderLen is the length of a TLS record header: content type,
	// legacy version, length.
	RecordHeaderLen = 5
	// MaxRecordPayload is the largest plaintext record payload, 2^14 bytes.
	MaxRecordPayload = 1 << 14
	// MaxRecordLen is the most bytes a ClientHello record can take.
	MaxRecordLen = RecordHeaderLen + MaxRecordPayload
)

// Errors returned by the parsers, wrapped with what was wrong.
var (
	// ErrTruncated means the input ends before the lengths it declares:
	// a record cut short, or a ClientHello spanning more than one record.
	ErrTruncated = errors.New("ja4: truncated ClientHello")
	// ErrMalformed means the input is not a well-formed ClientHello record.
	ErrMalformed = errors.New("ja4: malformed ClientHello")
)

// TLS constants used while parsing.
const (
	contentTypeHandshake = 0x16
	handshakeClientHello = 0x01

	extServerName          = 0x0000
	extSupportedGroups     = 0x000a
	extSignatureAlgorithms = 0x000d
	extALPN                = 0x0010
	extSupportedVersions   = 0x002b
	extQUICTransportParams = 0x0039
)

// Hello holds what a ClientHello says about the client's TLS stack. Lists are
// in the order the client sent them, GREASE values included (IsGREASE tells
// them apart); JA4 leaves GREASE out, as the specification says.
type Hello struct {
	// Protocol is JA4's first character: 't' for TLS over TCP, 'q' when the
	// hello carries QUIC transport parameters (a QUIC ClientHello).
	Protocol byte
	// RecordVersion is the legacy version of the record header (0x0301 for
	// most clients); zero when the hello was parsed without its record.
	RecordVersion uint16
	// LegacyVersion is the ClientHello's client_version field (0x0303 for
	// any TLS 1.3 client).
	LegacyVersion uint16
	// SupportedVersions is the supported_versions extension's list, nil
	// without that extension.
	SupportedVersions []uint16
	// CipherSuites is the list of cipher suites offered.
	CipherSuites []uint16
	// Extensions is the list of extension types, in the order sent.
	Extensions []uint16
	// SupportedGroups is the supported_groups extension's list (named
	// groups for key exchange).
	SupportedGroups []uint16
	// SignatureAlgorithms is the signature_algorithms extension's list.
	SignatureAlgorithms []uint16
	// ALPN is the protocol names of the ALPN extension ("h2", "http/1.1").
	ALPN []string
	// HasSNI says the server_name extension is present (JA4's 'd', against
	// 'i' for a connection to a bare address).
	HasSNI bool
	// GREASE says where the client put GREASE values (RFC 8701): BoringSSL
	// (Chromium) and some others do, OpenSSL, Go, NSS and Java do not.
	GREASE GREASE
}

// GREASE says in which lists a ClientHello carries GREASE values.
type GREASE struct {
	Ciphers, Extensions, Groups, Versions, SignatureAlgorithms bool
}

// Any says whether any list carries a GREASE value.
func (g GREASE) Any() bool {
	return g.Ciphers || g.Extensions || g.Groups || g.Versions || g.SignatureAlgorithms
}

// IsGREASE reports whether v is one of the 16 reserved GREASE values of
// RFC 8701 (0x0a0a, 0x1a1a, ... 0xfafa).
func IsGREASE(v uint16) bool {
	return v&0x0f0f == 0x0a0a && v>>8 == v&0xff
}

// HasExtension reports whether the hello carries extension type t.
func (h *Hello) HasExtension(t uint16) bool { return slices.Contains(h.Extensions, t) }

// ParseClientHello parses one TLS record holding a complete ClientHello, as
// a client sends it first on a TLS connection. Bytes after the record are
// ignored. A ClientHello spanning several records gets ErrTruncated.
func ParseClientHello(record []byte) (*Hello, error) {
	if len(record) < RecordHeaderLen {
		return nil, fmt.Errorf("%w: %d bytes, a record header takes %d", ErrTruncated, len(record), RecordHeaderLen)
	}
	if record[0] != contentTypeHandshake {
		return nil, fmt.Errorf("%w: record content type %d, want handshake (22)", ErrMalformed, record[0])
	}
	n := int(binary.BigEndian.Uint16(record[3:5]))
	if n > MaxRecordPayload {
		return nil, fmt.Errorf("%w: record length %d exceeds %d", ErrMalformed, n, MaxRecordPayload)
	}
	if len(record)-RecordHeaderLen < n {
		return nil, fmt.Errorf("%w: record declares %d bytes, %d present", ErrTruncated, n, len(record)-RecordHeaderLen)
	}
	h, err := ParseHandshake(record[RecordHeaderLen : RecordHeaderLen+n])
	if err != nil {
		return nil, err
	}
	h.RecordVersion = binary.BigEndian.Uint16(record[1:3])
	return h, nil
}

// ParseHandshake parses a ClientHello handshake message (type, length,
// body) without a record header, as QUIC carries it in CRYPTO frames.
// Bytes after the message are ignored.
func ParseHandshake(msg []byte) (*Hello, error) {
	if len(msg) > MaxRecordPayload {
		// Bounded work whatever the caller passes.
		msg = msg[:MaxRecordPayload]
	}
	if len(msg) < 4 {
		return nil, fmt.Errorf("%w: handshake header cut short", ErrTruncated)
	}
	if msg[0] != handshakeClientHello {
		return nil, fmt.Errorf("%w: handshake type %d, want ClientHello (1)", ErrMalformed, msg[0])
	}
	n := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
	if len(msg)-4 < n {
		return nil, fmt.Errorf("%w: ClientHello declares %d bytes, %d in this record", ErrTruncated, n, len(msg)-4)
	}
	return parseBody(reader(msg[4 : 4+n]))
}

// reader reads big-endian fields from a byte slice; every method checks the
// bytes left.
type reader []byte

func (r *reader) u8() (byte, bool) {
	if len(*r) < 1 {
		return 0, false
	}
	v := (*r)[0]
	*r = (*r)[1:]
	return v, true
}

func (r *reader) u16() (uint16, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := binary.BigEndian.Uint16(*r)
	*r = (*r)[2:]
	return v, true
}

// bytes returns the next n bytes.
func (r *reader) bytes(n int) (reader, bool) {
	if len(*r) < n {
		return nil, false
	}
	v := (*r)[:n:n]
	*r = (*r)[n:]
	return v, true
}

// vec8 and vec16 return a vector with a one- or two-byte length prefix.
func (r *reader) vec8() (reader, bool) {
	n, ok := r.u8()
	if !ok {
		return nil, false
	}
	return r.bytes(int(n))
}

func (r *reader) vec16() (reader, bool) {
	n, ok := r.u16()
	if !ok {
		return nil, false
	}
	return r.bytes(int(n))
}

// u16s reads a vector of 16-bit values, noting whether any is GREASE.
func (r reader) u16s() (list []uint16, grease bool, ok bool) {
	if len(r)%2 != 0 {
		return nil, false, false
	}
	list = make([]uint16, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		v := binary.BigEndian.Uint16(r[i:])
		grease = grease || IsGREASE(v)
		list = append(list, v)
	}
	return list, grease, true
}

func malformed(what string) error { return fmt.Errorf("%w: %s", ErrMalformed, what) }

// parseBody parses a ClientHello body (RFC 8446 section 4.1.2).
func parseBody(r reader) (*Hello, error) {
	h := &Hello{Protocol: 't'}
	var ok bool
	if h.LegacyVersion, ok = r.u16(); !ok {
		return nil, malformed("no client_version")
	}
	if _, ok = r.bytes(32); !ok {
		return nil, malformed("random cut short")
	}
	if sid, ok := r.vec8(); !ok || len(sid) > 32 {
		return nil, malformed("bad legacy_session_id")
	}
	ciphers, ok := r.vec16()
	if !ok || len(ciphers) < 2 {
		return nil, malformed("bad cipher_suites")
	}
	if h.CipherSuites, h.GREASE.Ciphers, ok = ciphers.u16s(); !ok {
		return nil, malformed("odd cipher_suites length")
	}
	if comp, ok := r.vec8(); !ok || len(comp) < 1 {
		return nil, malformed("bad legacy_compression_methods")
	}
	if len(r) == 0 {
		return h, nil // a hello without extensions (SSL 3.0 style)
	}
	exts, ok := r.vec16()
	if !ok {
		return nil, malformed("extensions cut short")
	}
	h.Extensions = make([]uint16, 0, len(exts)/4)
	for len(exts) > 0 {
		typ, ok := exts.u16()
		if !ok {
			return nil, malformed("extension header cut short")
		}
		data, ok := exts.vec16()
		if !ok {
			return nil, malformed(fmt.Sprintf("extension 0x%04x cut short", typ))
		}
		h.Extensions = append(h.Extensions, typ)
		h.GREASE.Extensions = h.GREASE.Extensions || IsGREASE(typ)
		if err := h.extension(typ, data); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// extension reads the extensions JA4 and the judgement need.
func (h *Hello) extension(typ uint16, data reader) error {
	ok, grease := true, false
	switch typ {
	case extServerName:
		h.HasSNI = true
	case extQUICTransportParams:
		h.Protocol = 'q'
	case extSupportedGroups:
		var list reader
		if list, ok = data.vec16(); ok {
			h.SupportedGroups, grease, ok = list.u16s()
			h.GREASE.Groups = h.GREASE.Groups || grease
		}
	case extSignatureAlgorithms:
		var list reader
		if list, ok = data.vec16(); ok {
			h.SignatureAlgorithms, grease, ok = list.u16s()
			h.GREASE.SignatureAlgorithms = h.GREASE.SignatureAlgorithms || grease
		}
	case extSupportedVersions:
		var list reader
		if list, ok = data.vec8(); ok {
			h.SupportedVersions, grease, ok = list.u16s()
			h.GREASE.Versions = h.GREASE.Versions || grease
		}
	case extALPN:
		var list reader
		if list, ok = data.vec16(); ok {
			h.ALPN = h.ALPN[:0]
			for len(list) > 0 && ok {
				var name reader
				if name, ok = list.vec8(); ok {
					h.ALPN = append(h.ALPN, string(name))
				}
			}
		}
	default:
		return nil
	}
	if !ok {
		return malformed(fmt.Sprintf("extension 0x%04x body", typ))
	}
	return nil
}

// Version returns the TLS version JA4 reports: the highest non-GREASE value
// of supported_versions when that extension is present, else the
// ClientHello's client_version (never the record header's).
func (h *Hello) Version() uint16 {
	if h.HasExtension(extSupportedVersions) {
		var best uint16
		for _, v := range h.SupportedVersions {
			if !IsGREASE(v) && v > best {
				best = v
			}
		}
		if best != 0 {
			return best
		}
	}
	return h.LegacyVersion
}

// versionCode is JA4's two-character version code; "00" when unknown.
func versionCode(v uint16) string {
	switch v {
	case 0x0304:
		return "13"
	case 0x0303:
		return "12"
	case 0x0302:
		return "11"
	case 0x0301:
		return "10"
	case 0x0300:
		return "s3"
	case 0x0002:
		return "s2"
	case 0xfeff:
		return "d1"
	case 0xfefd:
		return "d2"
	case 0xfefc:
		return "d3"
	}
	return "00"
}

// JA4 returns the hello's JA4 fingerprint, e.g.
// "t13d1516h2_8daaf6152771_e5627efa2ab1":
//
//	a: protocol, version, SNI (d/i), cipher count, extension count (each
//	   two digits, GREASE excluded, capped at 99), first and last character
//	   of the first ALPN value ("00" without one);
//	b: the first 12 hex digits of the SHA-256 of the sorted cipher list;
//	c: the same of the sorted extension list without SNI and ALPN, followed
//	   by "_" and the signature algorithms in the order sent (no "_" when
//	   there are none).
//
// Lists are 4-digit lowercase hex, comma-separated; an empty list hashes to
// "000000000000". GREASE values are left out everywhere, signature
// algorithms included, as the specification says ("ignore GREASE values
// anywhere"); no known client GREASEs its signature algorithms.
func (h *Hello) JA4() string {
	a, ciphers, exts := h.parts()
	out := make([]byte, 0, 36)
	out = append(out, a...)
	out = append(out, '_')
	out = appendHash12(out, ciphers)
	out = append(out, '_')
	out = appendHash12(out, exts)
	return string(out)
}

// JA4R returns the raw fingerprint the specification calls JA4_r: JA4 with
// the two lists written out instead of hashed, e.g.
// "t13d1516h2_002f,0035,..._0005,000a,..._0403,0804,...".
func (h *Hello) JA4R() string {
	a, ciphers, exts := h.parts()
	return string(a) + "_" + string(ciphers) + "_" + string(exts)
}

// parts returns JA4's first part and the two lists its hashes are of.
func (h *Hello) parts() (a, ciphers, exts []byte) {
	cs := withoutGREASE(h.CipherSuites, nil)
	es := withoutGREASE(h.Extensions, nil)
	nCiphers, nExts := min(len(cs), 99), min(len(es), 99)

	a = make([]byte, 0, 10)
	a = append(a, h.Protocol)
	a = append(a, versionCode(h.Version())...)
	if h.HasSNI {
		a = append(a, 'd')
	} else {
		a = append(a, 'i')
	}
	a = append(a, byte('0'+nCiphers/10), byte('0'+nCiphers%10), byte('0'+nExts/10), byte('0'+nExts%10))
	a = append(a, alpnCode(h.ALPN)...)

	slices.Sort(cs)
	ciphers = appendHexList(nil, cs)

	es = slices.DeleteFunc(es, func(e uint16) bool { return e == extServerName || e == extALPN })
	slices.Sort(es)
	if len(es) > 0 {
		exts = appendHexList(make([]byte, 0, 5*len(es)+5*len(h.SignatureAlgorithms)), es)
		if sigs := withoutGREASE(h.SignatureAlgorithms, nil); len(sigs) > 0 {
			exts = appendHexList(append(exts, '_'), sigs)
		}
	}
	return a, ciphers, exts
}

// alpnCode is JA4's two ALPN characters: the first and last characters of
// the first ALPN value when both are ASCII alphanumerics, else the first and
// last hex digits of that value; "00" without one.
func alpnCode(alpn []string) string {
	if len(alpn) == 0 || alpn[0] == "" {
		return "00"
	}
	v := alpn[0]
	first, last := v[0], v[len(v)-1]
	if isAlnum(first) && isAlnum(last) {
		return string([]byte{first, last})
	}
	return string([]byte{hexDigits[first>>4], hexDigits[last&0x0f]})
}

const hexDigits = "0123456789abcdef"

func isAlnum(b byte) bool {
	return '0' <= b && b <= '9' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z'
}

// withoutGREASE appends the non-GREASE values of list to dst.
func withoutGREASE(list, dst []uint16) []uint16 {
	for _, v := range list {
		if !IsGREASE(v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// appendHexList appends list as comma-separated 4-digit lowercase hex.
func appendHexList(dst []byte, list []uint16) []byte {
	for i, v := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, hexDigits[v>>12], hexDigits[v>>8&0xf], hexDigits[v>>4&0xf], hexDigits[v&0xf])
	}
	return dst
}

// appendHash12 appends the first 12 lowercase hex digits of the SHA-256 of
// s, or "000000000000" when s is empty.
func appendHash12(dst, s []byte) []byte {
	if len(s) == 0 {
		return append(dst, "000000000000"...)
	}
	sum := sha256.Sum256(s)
	return hex.AppendEncode(dst, sum[:6])
}

// IsFingerprint reports whether s has the shape of a JA4 fingerprint, as
// JA4 computes it ("t13d1517h2_8daaf6152771_cb7bf5808d99"): what a proxy
// that terminates TLS may pass on in a header, checked before it is
// believed or shown.
func IsFingerprint(s string) bool {
	if len(s) != 36 || s[10] != '_' || s[23] != '_' {
		return false
	}
	if s[0] != 't' && s[0] != 'q' && s[0] != 'd' {
		return false
	}
	switch s[1:3] {
	case "13", "12", "11", "10", "s3", "s2", "d1", "d2", "d3", "00":
	default:
		return false
	}
	if s[3] != 'd' && s[3] != 'i' {
		return false
	}
	for i := 4; i < 8; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	if !isAlnum(s[8]) || !isAlnum(s[9]) {
		return false
	}
	for i := 11; i < len(s); i++ {
		if i == 23 {
			continue
		}
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
