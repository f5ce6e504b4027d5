package state

import (
	"strings"
	"testing"
)

func TestParseRedisURL(t *testing.T) {
	tests := []struct {
		url        string
		addrs      []string
		master     string
		cluster    bool
		db         int
		user, pass string
		tls        bool
	}{
		{url: "redis://localhost:6379", addrs: []string{"localhost:6379"}},
		{url: "redis://u:p@10.0.0.1/2?dial_timeout=1s", addrs: []string{"10.0.0.1:6379"}, db: 2, user: "u", pass: "p"},
		{url: "rediss://cache.example:6380", addrs: []string{"cache.example:6380"}, tls: true},
		{url: "redis://[::1]:7000", addrs: []string{"[::1]:7000"}},
		{url: "unix:///run/redis.sock?db=3", addrs: []string{"/run/redis.sock"}, db: 3},
		{url: "redis+sentinel://s1:26379?master_name=mymaster&addr=s2:26379", addrs: []string{"s1:26379", "s2:26379"}, master: "mymaster"},
		{url: "redis+cluster://n1:7000?addr=n2:7000&addr=n3:7000", addrs: []string{"n1:7000", "n2:7000", "n3:7000"}, cluster: true},
		{url: "rediss+cluster://n1:7000", addrs: []string{"n1:7000"}, cluster: true, tls: true},
	}
	for _, tt := range tests {
		o, err := ParseRedisURL(tt.url)
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if len(o.Addrs) != len(tt.addrs) {
			t.Errorf("%s: addrs %v, want %v", tt.url, o.Addrs, tt.addrs)
		} else {
			for i := range o.Addrs {
				if o.Addrs[i] != tt.addrs[i] {
					t.Errorf("%s: addrs %v, want %v", tt.url, o.Addrs, tt.addrs)
				}
			}
		}
		if o.MasterName != tt.master || o.IsClusterMode != tt.cluster || o.DB != tt.db ||
			o.Username != tt.user || o.Password != tt.pass || (o.TLSConfig != nil) != tt.tls || !o.ContextTimeoutEnabled {
			t.Errorf("%s: got %+v", tt.url, o)
		}
	}
	for _, bad := range []string{"http://x", "redis+sentinel://s1:26379", "redis://x?nonsense=1", "redis+ring://x", "redis://x/notadb"} {
		if _, err := ParseRedisURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// Errors do not show passwords.
	if _, err := ParseRedisURL("redis://u:secret@x?nonsense=1"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestRedisOptions(t *testing.T) {
	o, err := RedisOptions([]string{"s1:26379", "s2:26379"}, "mymaster", false)
	if err != nil || o.MasterName != "mymaster" || len(o.Addrs) != 2 || !o.ContextTimeoutEnabled {
		t.Fatalf("sentinel: %+v %v", o, err)
	}
	if o, err := RedisOptions([]string{"n1:7000"}, "", true); err != nil || !o.IsClusterMode {
		t.Fatalf("cluster: %+v %v", o, err)
	}
	for _, bad := range [][]string{nil, {"nohost"}} {
		if _, err := RedisOptions(bad, "", false); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := RedisOptions([]string{"a:1"}, "m", true); err == nil {
		t.Error("sentinel and cluster together: no error")
	}
}
