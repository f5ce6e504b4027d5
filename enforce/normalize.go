package enforce

// Percent-encoding normalisation, shared by patterns and request targets.
//
// The normal form of a string is obtained byte by byte:
//
//   - "%XY" with two hex digits: if the octet 0xXY is unreserved
//     (A-Z a-z 0-9 - . _ ~) it is decoded; otherwise it is kept as "%XY"
//     with upper-case hex digits;
//   - a "%" not followed by two hex digits is encoded as "%25";
//   - octets that may not appear raw in a URI (non-ASCII 0x80-0xFF, control
//     characters, space, DEL and " < > \ ^ ` { | }) are encoded as "%XY";
//   - a literal "*" or "$" (only possible in a target, or as a "$" that is not
//     the last byte of a pattern) is encoded as "%2A" or "%24", so that a
//     pattern written with "%2A" or "%24" matches it;
//   - every other byte is kept.
//
// Normal forms therefore never contain a raw "*" or "$", and two spellings of
// the same URI character always have the same normal form.

import (
	"sync"
	"unsafe"
)

const hexUpper = "0123456789ABCDEF"

// Byte classes.
const (
	clKeep    = 0
	clEncode  = 1 // percent-encode this byte
	clPercent = 2 // start of an escape
	clHash    = 3 // fragment start (targets only; never in patterns)
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 0x80 || c <= 0x20 || c == 0x7F:
			t[c] = clEncode
		}
	}
	for _, c := range []byte("\"<>\\^`{|}*$") {
		t[c] = clEncode
	}
	t['%'] = clPercent
	t['#'] = clHash
	return t
}()

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendNormal appends the normal form of s to dst. A '#' is treated like
// any byte to encode (patterns cannot contain one; targets are cut before).
func appendNormal(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch byteClass[c] {
		case clKeep:
			dst = append(dst, c)
		case clPercent:
			if v, n := octetAt(s, i); n == 3 {
				if isUnreserved(v) {
					dst = append(dst, v)
				} else {
					dst = append(dst, '%', hexUpper[v>>4], hexUpper[v&15])
				}
				i += 2
				continue
			}
			dst = append(dst, '%', '2', '5')
		default:
			dst = append(dst, '%', hexUpper[c>>4], hexUpper[c&15])
		}
	}
	return dst
}

// normalString returns the normal form of s as a string.
func normalString(s string) string {
	if isNormal(s) {
		return s
	}
	return string(appendNormal(make([]byte, 0, len(s)+8), s))
}

// isNormal reports whether s is already in normal form and has no '#'.
func isNormal(s string) bool {
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4]
		if byteClass[q[0]]|byteClass[q[1]]|byteClass[q[2]]|byteClass[q[3]] != clKeep {
			return false
		}
	}
	for ; i < len(s); i++ {
		if byteClass[s[i]] != clKeep {
			return false
		}
	}
	return true
}

// cleanPrefix reports whether t[:n] is in normal form and has no '#', like
// isNormal(t[:n]), 8 octets at a time and mostly without branches: a quick
// test flags every octet that is not kept as it is (and also '~'), and the
// octet table decides only when it fires.
func cleanPrefix(t string, n int) bool {
	if len(t) < 8 {
		return isNormal(t[:n])
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		if suspect(load64(t, i)) != 0 {
			return isNormal(t[i:n])
		}
	}
	var bad uint64
	if i < n {
		if n >= 8 {
			bad = suspect(load64(t, n-8))
		} else {
			bad = suspect(load64(t, 0)) & (1<<(8*n) - 1)
		}
	}
	return bad == 0 || isNormal(t[i:n])
}

// suspect flags (in the top bit of each octet) the octets of x that
// normalisation does not keep as they are, and '~' (which it keeps).
func suspect(x uint64) uint64 {
	const m7 = 0x7F7F7F7F7F7F7F7F
	y := x & m7
	bad := x                                              // non-ASCII
	bad |= ^(y + (0x80-0x21)*lsb)                         // < 0x21: controls, space
	bad |= y + (0x80-0x7B)*lsb                            // >= 0x7B: { | } ~ DEL
	bad |= (y + (0x80-0x22)*lsb) &^ (y + (0x80-0x26)*lsb) // " # $ %
	bad |= ^(y ^ 0x2A*lsb + m7)                           // *
	bad |= ^(y ^ 0x60*lsb + m7)                           // `
	bad |= ^((y & (0x1D * lsb)) ^ 0x1C*lsb + m7)          // < > \ ^ (and octets flagged above)
	return bad & msb
}

// cleanTarget applies the target conventions: a fragment is dropped, and a
// target that does not start with "/" (including "") gets one prepended.
// It reports whether a "/" must be prepended and the part to normalise.
func cleanTarget(target string) (slash bool, rest string) {
	for i := 0; i < len(target); i++ {
		if target[i] == '#' {
			target = target[:i]
			break
		}
	}
	return len(target) == 0 || target[0] != '/', target
}

// bigBuf holds normalisation buffers for targets longer than the stack buffer.
var bigBuf = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// normalTarget returns the normal form of target (cleanTarget, then
// appendNormal): written into small when it fits, or else into a buffer
// from bigBuf, returned as big. The string lives in that memory: use it
// only until releaseTarget(big).
func normalTarget(small *[512]byte, target string) (t string, big *[]byte) {
	slash, rest := cleanTarget(target)
	if 3*len(rest)+1 <= len(small) {
		b := appendTarget(small[:0], slash, rest)
		return unsafe.String(&b[0], len(b)), nil
	}
	big = bigBuf.Get().(*[]byte)
	b := appendTarget((*big)[:0], slash, rest)
	*big = b[:0] // keep what the buffer grew to
	return unsafe.String(&b[0], len(b)), big
}

func appendTarget(dst []byte, slash bool, rest string) []byte {
	if slash {
		dst = append(dst, '/')
	}
	return appendNormal(dst, rest)
}

// releaseTarget gives back the buffer of a string from normalTarget.
func releaseTarget(big *[]byte) {
	if big != nil {
		bigBuf.Put(big)
	}
}
