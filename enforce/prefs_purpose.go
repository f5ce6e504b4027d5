package enforce

import "strconv"

// Refusal tells which preference refuses a crawler purpose.
type Refusal struct {
	// Purpose is the purpose as the vocabulary names it: "ai-training",
	// "ai-answers" or "search".
	Purpose string
	// By is the label whose "no" refuses it, with the line that says so.
	By LabelState
}

// String formats the refusal, e.g.
// "ai-training refused by Content-Usage train-ai=n (line 4)".
func (r Refusal) String() string {
	s := r.Purpose + " refused by " + r.By.Scheme.String() + " " + r.By.Label + "=" + r.By.Value
	if r.By.Line > 0 {
		s += " (line " + strconv.Itoa(r.By.Line) + ")"
	}
	return s
}

// Refuses reports whether the preferences refuse a crawler with the given
// purpose, and which label does. The purposes and their labels come from
// the vocabulary (see [Vocab]):
//
//   - "ai-training" (also "ai-train", "train-ai", "training"): refused by
//     Content-Usage train-ai=n or Content-Signal ai-train=no;
//   - "ai-answers" (also "ai-input", and the crawler categories "ai-search"
//     and "ai-assistant"): refused by Content-Signal ai-input=no;
//   - "search": refused by Content-Usage search=n or Content-Signal
//     search=no.
//
// Purposes are compared case-insensitively. Any other purpose, and an
// unknown or "yes" state, is never refused. When several labels refuse,
// the first in vocabulary order (Content-Usage first) is reported.
func (p Preferences) Refuses(purpose string) (Refusal, bool) {
	pi := vocab.purpose(purpose)
	if pi == nil {
		return Refusal{}, false
	}
	for _, i := range pi.slots {
		if p.st[i].v == uint8(PrefNo) {
			return Refusal{Purpose: pi.names[0], By: p.state(i)}, true
		}
	}
	return Refusal{}, false
}
