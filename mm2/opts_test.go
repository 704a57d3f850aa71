package mm2

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/kconn"
)

// TestClusterOpts: a cluster without bootstrap servers is refused naming the MM2 key and the
// flags that set them; anything else is kconn's answer, named by the cluster's alias.
func TestClusterOpts(t *testing.T) {
	tests := []struct {
		name string
		c    Cluster
		want string
	}{
		{"no bootstrap", Cluster{Alias: "source"}, "set source.bootstrap.servers in the MM2 file or pass --source-brokers/--target-brokers"},
		{"bad protocol", Cluster{Alias: "a", Bootstrap: []string{"x:1"}, Security: kconn.Security{Protocol: "TLS"}}, "cluster a: security protocol"},
		{"SASL without user", Cluster{Alias: "a", Bootstrap: []string{"x:1"}, Security: kconn.Security{Protocol: "SASL_PLAINTEXT"}}, "needs a user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.Opts()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Opts: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	c := Cluster{Alias: "a", Bootstrap: []string{"x:1"}, Security: kconn.Security{Protocol: "SASL_SSL", SASLUser: "u", SASLPassword: "pw"}}
	if opts, err := c.Opts(); err != nil || len(opts) != 3 {
		t.Fatalf("SASL_SSL Opts: got %d opts, %v; want 3 (seeds, SASL, dialer), nil", len(opts), err)
	}
}
