package enforce

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// The AI usage preference vocabulary lives in prefs_vocab.json: the labels of
// both schemes, what they mean, their synonyms across schemes, the labels of
// older draft revisions, and which labels refuse which crawler purpose. The
// code below only loads it; a renamed label is a change of data.

//go:embed prefs_vocab.json
var vocabJSON []byte

// Scheme names the syntax a preference was written in.
type Scheme uint8

// The preference schemes.
const (
	// ContentUsage is the IETF aipref scheme: a "Content-Usage" robots.txt
	// rule or HTTP header field holding a structured-field dictionary such
	// as "train-ai=n, search=y".
	ContentUsage Scheme = iota + 1
	// ContentSignal is Cloudflare's Content Signals scheme: a
	// "Content-Signal" robots.txt line such as "search=yes, ai-train=no".
	ContentSignal
)

// String returns "Content-Usage" or "Content-Signal".
func (s Scheme) String() string {
	switch s {
	case ContentUsage:
		return "Content-Usage"
	case ContentSignal:
		return "Content-Signal"
	}
	return "Scheme(" + fmt.Sprint(uint8(s)) + ")"
}

func parseScheme(s string) (Scheme, error) {
	switch s {
	case "content-usage":
		return ContentUsage, nil
	case "content-signal":
		return ContentSignal, nil
	}
	return 0, fmt.Errorf("unknown scheme %q", s)
}

// Label describes one label of the vocabulary.
type Label struct {
	Scheme  Scheme
	Name    string   // as written in the file: "train-ai", "ai-train", "use"
	Meaning string   // the category of use, in a sentence
	Same    string   // the label of the other scheme with the same meaning, or ""
	Levels  []string // for a level label ("use"): its values, most restrictive first
	Since   string   // the draft revision or date that introduced it, when known
}

// Vocabulary describes the preference vocabulary the package understands and
// the sources it follows.
type Vocabulary struct {
	// Attach, Vocab and ContentSignal name the specifications followed, with
	// their revisions.
	Attach, Vocab, ContentSignal string
	// Labels are the labels understood, Content-Usage ones first.
	Labels []Label
	// Outdated are labels of earlier draft revisions (or common mistakes),
	// which are ignored like any unknown label and reported by Lint.
	Outdated []OutdatedLabel
	// Purposes lists the crawler purposes that preferences can refuse.
	Purposes []Purpose
}

// OutdatedLabel is a label that the vocabulary no longer defines.
type OutdatedLabel struct {
	Scheme  Scheme
	Name    string
	Meaning string
	LastIn  string // the last revision that defined it
	Use     string // the current label with the closest meaning, or ""
}

// Purpose maps a crawler purpose to the labels whose refusal refuses it.
type Purpose struct {
	Name      string   // "ai-training", "ai-answers", "search"
	Aliases   []string // other names accepted for it (catalogue categories)
	RefusedBy []LabelRef
}

// LabelRef names a label of a scheme.
type LabelRef struct {
	Scheme Scheme
	Name   string
}

// label kinds
const (
	kindYN    = iota // content-usage: tokens y / n
	kindYesNo        // content-signal: yes / no
	kindLevel        // content-signal: one of Levels
)

// maxLabels bounds the labels of both schemes, so that a Preferences value
// holds its states inline.
const maxLabels = 16

type vocabLabel struct {
	Label
	kind int
}

type purposeIdx struct {
	names []string // name and aliases
	slots []int
}

var vocab = loadVocab(vocabJSON)

type vocabulary struct {
	pub      Vocabulary
	labels   []vocabLabel // index = slot in Preferences
	purposes []purposeIdx
}

func loadVocab(data []byte) *vocabulary {
	v, err := decodeVocab(data)
	if err != nil {
		panic("enforce: prefs_vocab.json: " + err.Error())
	}
	return v
}

func decodeVocab(data []byte) (*vocabulary, error) {
	var raw struct {
		Sources struct {
			Attach, Vocab, ContentSignal string
		}
		Labels []struct {
			Scheme, Label, Kind, Meaning, Same, Since string
			Levels                                    []string
		}
		Outdated []struct {
			Scheme, Label, LastIn, Meaning, Use string
		}
		Purposes []struct {
			Purpose   string
			Aliases   []string
			RefusedBy []struct{ Scheme, Label string }
		}
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	v := &vocabulary{}
	v.pub.Attach, v.pub.Vocab, v.pub.ContentSignal = raw.Sources.Attach, raw.Sources.Vocab, raw.Sources.ContentSignal
	for _, l := range raw.Labels {
		s, err := parseScheme(l.Scheme)
		if err != nil {
			return nil, fmt.Errorf("label %q: %w", l.Label, err)
		}
		vl := vocabLabel{Label: Label{Scheme: s, Name: l.Label, Meaning: l.Meaning, Same: l.Same, Levels: l.Levels, Since: l.Since}}
		switch {
		case l.Kind == "yn" && s == ContentUsage:
			vl.kind = kindYN
		case l.Kind == "yesno" && s == ContentSignal:
			vl.kind = kindYesNo
		case l.Kind == "level" && s == ContentSignal && len(l.Levels) > 0 && len(l.Levels) < 250:
			vl.kind = kindLevel
		default:
			return nil, fmt.Errorf("label %q: kind %q does not fit scheme %s", l.Label, l.Kind, s)
		}
		if v.slot(s, l.Label) >= 0 {
			return nil, fmt.Errorf("label %q of %s listed twice", l.Label, s)
		}
		v.labels = append(v.labels, vl)
	}
	if len(v.labels) > maxLabels {
		return nil, fmt.Errorf("%d labels; at most %d fit (raise maxLabels)", len(v.labels), maxLabels)
	}
	// Content-Usage labels first: String renders them in this order.
	var cu, cs []vocabLabel
	for _, l := range v.labels {
		if l.Scheme == ContentUsage {
			cu = append(cu, l)
		} else {
			cs = append(cs, l)
		}
	}
	v.labels = append(cu, cs...)
	for _, l := range v.labels {
		v.pub.Labels = append(v.pub.Labels, l.Label)
	}
	for _, o := range raw.Outdated {
		s, err := parseScheme(o.Scheme)
		if err != nil {
			return nil, fmt.Errorf("outdated label %q: %w", o.Label, err)
		}
		v.pub.Outdated = append(v.pub.Outdated, OutdatedLabel{Scheme: s, Name: o.Label, Meaning: o.Meaning, LastIn: o.LastIn, Use: o.Use})
	}
	for _, p := range raw.Purposes {
		pi := purposeIdx{names: append([]string{p.Purpose}, p.Aliases...)}
		pub := Purpose{Name: p.Purpose, Aliases: p.Aliases}
		for _, r := range p.RefusedBy {
			s, err := parseScheme(r.Scheme)
			if err != nil {
				return nil, fmt.Errorf("purpose %q: %w", p.Purpose, err)
			}
			i := v.slot(s, r.Label)
			if i < 0 || v.labels[i].kind == kindLevel {
				return nil, fmt.Errorf("purpose %q: %s label %q is not a yes/no label of the vocabulary", p.Purpose, s, r.Label)
			}
			pi.slots = append(pi.slots, i)
			pub.RefusedBy = append(pub.RefusedBy, LabelRef{Scheme: s, Name: r.Label})
		}
		v.purposes = append(v.purposes, pi)
		v.pub.Purposes = append(v.pub.Purposes, pub)
	}
	return v, nil
}

// slot returns the index of the label of scheme s, or -1.
func (v *vocabulary) slot(s Scheme, name string) int {
	for i := range v.labels {
		if v.labels[i].Scheme == s && v.labels[i].Name == name {
			return i
		}
	}
	return -1
}

// slotFold is slot with an ASCII case-insensitive name.
func (v *vocabulary) slotFold(s Scheme, name string) int {
	for i := range v.labels {
		if v.labels[i].Scheme == s && equalFold(v.labels[i].Name, name) {
			return i
		}
	}
	return -1
}

// purpose returns the purpose named name (or one of its aliases), compared
// case-insensitively, or nil.
func (v *vocabulary) purpose(name string) *purposeIdx {
	name = strings.TrimSpace(name)
	for i := range v.purposes {
		for _, n := range v.purposes[i].names {
			if equalFold(n, name) {
				return &v.purposes[i]
			}
		}
	}
	return nil
}

// outdated returns the outdated label of scheme s named name, or nil.
func (v *vocabulary) outdated(s Scheme, name string) *OutdatedLabel {
	for i := range v.pub.Outdated {
		if o := &v.pub.Outdated[i]; o.Scheme == s && equalFold(o.Name, name) {
			return o
		}
	}
	return nil
}

// Vocab returns the AI usage preference vocabulary the package understands:
// its labels, the labels of earlier draft revisions, the purposes that
// [Preferences.Refuses] knows, and the revisions of the specifications
// followed. The value is shared: do not modify it.
func Vocab() *Vocabulary { return &vocab.pub }
