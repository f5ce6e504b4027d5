package state

import (
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"
	"unique"
)

// clipText cuts s to at most MaxNameLen bytes, at a UTF-8 character
// boundary, so that what people read stays valid text.
func clipText(s string) string {
	if len(s) <= MaxNameLen {
		return s
	}
	n := MaxNameLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clipped returns info with every string cut by clipText.
func (info StrikeInfo) clipped() StrikeInfo {
	info.Crawler = clipText(info.Crawler)
	info.Token = clipText(info.Token)
	info.Version = clipText(info.Version)
	info.Scope = clipText(info.Scope)
	return info
}

// interned is a string: the zero value is "", anything else a
// [unique.Handle]. Tokens, scopes and version ids are the operator's (a
// handful of distinct values), so interning keeps each once per process
// and costs a record 8 bytes per string; unique.Make copies the string, so
// a record never holds on to the caller's memory.
type interned struct{ h unique.Handle[string] }

func (t interned) String() string {
	if t == (interned{}) {
		return ""
	}
	return t.h.Value()
}

// set makes t hold s (already clipped), interning only when it changes.
func (t *interned) set(s string) {
	switch {
	case s == "":
		*t = interned{}
	case t.String() != s:
		t.h = unique.Make(s)
	}
}

// strikeLog is what an identity's strikes leave in the memory store: the
// last MaxStrikeRecords strikes of the current window in a ring, the last
// strike's crawler, token and scope, and the info of the ban in force. An
// entry gets one on its first strike (most identities never strike) and
// loses it when the entry is freed or its ban lifted. Its size is 128 bytes
// (checked by a test); the crawler's name, chosen by the client, is a copy
// of at most MaxNameLen bytes, shared with the identity's name or the
// previous crawler of the shard when equal; the other strings are interned.
type strikeLog struct {
	crawler string
	token   interned
	scope   interned
	at      [MaxStrikeRecords]int64 // Unix nanoseconds
	version [MaxStrikeRecords]interned
	line    [MaxStrikeRecords]int32
	n       uint8 // records held
	next    uint8 // ring slot of the next record
	// ban is the info of the ban in force (nil if none, or if it was
	// learnt without info). It is never modified once set, so results
	// share it.
	ban *BanInfo
}

// reset forgets the strikes of a window that ended.
func (l *strikeLog) reset() { l.n, l.next = 0, 0 }

// add records one strike at t; info is clipped. lastCrawler is the shard's
// previous crawler name and name the identity's, either shared with the
// record when equal; it returns the crawler name kept.
func (l *strikeLog) add(info StrikeInfo, t int64, name, lastCrawler string) string {
	switch info.Crawler {
	case l.crawler:
	case name:
		l.crawler = name
	case lastCrawler:
		l.crawler = lastCrawler
	default:
		l.crawler = strings.Clone(info.Crawler)
	}
	l.token.set(info.Token)
	l.scope.set(info.Scope)
	i := l.next
	l.at[i] = t
	l.line[i] = int32(min(max(info.Line, 0), math.MaxInt32))
	l.version[i].set(info.Version)
	l.next = (i + 1) % MaxStrikeRecords
	l.n = min(l.n+1, MaxStrikeRecords)
	return l.crawler
}

// banInfo returns the info of a ban starting at since from the records.
func (l *strikeLog) banInfo(since int64) *BanInfo {
	b := &BanInfo{
		Crawler: l.crawler,
		Token:   l.token.String(),
		Scope:   l.scope.String(),
		Since:   time.Unix(0, since),
		Strikes: make([]StrikeRecord, l.n),
	}
	first := int(l.next) - int(l.n) + MaxStrikeRecords
	for k := range b.Strikes {
		i := (first + k) % MaxStrikeRecords
		b.Strikes[k] = StrikeRecord{Line: int(l.line[i]), Version: l.version[i].String(), At: time.Unix(0, l.at[i])}
	}
	return b
}

// boundedInfo returns a copy of b fit to keep: strings clipped, at most the
// last MaxStrikeRecords strikes, in a slice of its own.
func boundedInfo(b BanInfo) *BanInfo {
	c := &BanInfo{
		Crawler: strings.Clone(clipText(b.Crawler)),
		Token:   strings.Clone(clipText(b.Token)),
		Scope:   strings.Clone(clipText(b.Scope)),
		Since:   b.Since,
	}
	if n := len(b.Strikes); n > 0 {
		src := b.Strikes[max(n-MaxStrikeRecords, 0):]
		c.Strikes = make([]StrikeRecord, len(src))
		for i, r := range src {
			c.Strikes[i] = StrikeRecord{Line: r.Line, Version: strings.Clone(clipText(r.Version)), At: r.At}
		}
	}
	return c
}

// The JSON kept in Redis: a strike record in the strike log list, and a
// ban key's value. Times are Unix milliseconds.
type (
	strikeJSON struct {
		Line    int    `json:"line,omitempty"`
		Version string `json:"version,omitempty"`
		At      int64  `json:"at"`
	}
	banJSON struct {
		Crawler string `json:"crawler,omitempty"`
		Token   string `json:"token,omitempty"`
		Scope   string `json:"scope,omitempty"`
		Since   int64  `json:"since,omitempty"`
		// Strikes is last: the strike script appends the records to the
		// JSON cut before "]}".
		Strikes []strikeJSON `json:"strikes"`
	}
)

// strikeRecordJSON is the strike log record of info at now.
func strikeRecordJSON(info StrikeInfo, now time.Time) string {
	b, _ := json.Marshal(strikeJSON{Line: max(info.Line, 0), Version: info.Version, At: now.UnixMilli()})
	return string(b)
}

// banHeadJSON is the ban value of a ban started at now by info, cut after
// the opening bracket of its strikes: the strike script completes it with
// the records and "]}".
func banHeadJSON(info StrikeInfo, now time.Time) string {
	b, _ := json.Marshal(banJSON{Crawler: info.Crawler, Token: info.Token, Scope: info.Scope, Since: now.UnixMilli(), Strikes: []strikeJSON{}})
	return strings.TrimSuffix(string(b), "]}")
}

// banValueJSON is the ban value of b.
func banValueJSON(b BanInfo) string {
	v := banJSON{Crawler: b.Crawler, Token: b.Token, Scope: b.Scope, Strikes: make([]strikeJSON, 0, len(b.Strikes))}
	if !b.Since.IsZero() {
		v.Since = b.Since.UnixMilli()
	}
	for _, r := range b.Strikes {
		v.Strikes = append(v.Strikes, strikeJSON{Line: r.Line, Version: r.Version, At: r.At.UnixMilli()})
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// parseBanValue reads a ban key's value. A value that is not the JSON of a
// ban ("1", written before bans carried their info) is a ban without info.
func parseBanValue(v string) BanInfo {
	if !strings.HasPrefix(v, "{") {
		return BanInfo{}
	}
	var j banJSON
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return BanInfo{}
	}
	b := BanInfo{Crawler: j.Crawler, Token: j.Token, Scope: j.Scope}
	if j.Since != 0 {
		b.Since = time.UnixMilli(j.Since)
	}
	if len(j.Strikes) > 0 {
		b.Strikes = make([]StrikeRecord, len(j.Strikes))
		for i, r := range j.Strikes {
			b.Strikes[i] = StrikeRecord{Line: r.Line, Version: r.Version, At: time.UnixMilli(r.At)}
		}
	}
	return b
}
