package caddyrobots

import "testing"

// TestMetricIndexes keeps the switches in actionIndex and categoryIndex in
// step with the label value tables.
func TestMetricIndexes(t *testing.T) {
	for i, a := range actionNames {
		if got := actionIndex(a); got != i {
			t.Errorf("actionIndex(%q) = %d, want %d", a, got, i)
		}
	}
	if got := actionIndex("nonsense"); got != -1 {
		t.Errorf("actionIndex(nonsense) = %d, want -1", got)
	}
	for i, c := range categoryNames {
		if got := categoryIndex(c); got != i {
			t.Errorf("categoryIndex(%q) = %d, want %d", c, got, i)
		}
	}
	if got, want := categoryIndex("made-up"), len(categoryNames)-1; got != want {
		t.Errorf("categoryIndex(made-up) = %d, want %d (other)", got, want)
	}
}
