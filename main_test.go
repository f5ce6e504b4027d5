package caddyrobots

import (
	"os"
	"testing"
)

// TestMain keeps the package's tests on loopback: no handler provisioned
// here downloads the operators' published IP lists.
func TestMain(m *testing.M) {
	_ = os.Setenv(RangesOperatorsEnv, "off")
	os.Exit(m.Run())
}
