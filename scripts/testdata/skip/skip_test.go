// Package skip is a package of tests for TestUnitSkipUnderCI: one passes,
// one skips, and one logs a [report] line.
package skip

import "testing"

func TestPasses(t *testing.T) { t.Log("[report] skip fixture: 1 figure") }

func TestSkips(t *testing.T) { t.Skip("the fixture's skip") }
