package mm2

import "github.com/twmb/franz-go/pkg/kgo"

// Opts returns the franz-go options that connect to c: seed brokers, TLS and SASL.
// (Foundation stub: seeds only; TLS and SASL follow.)
func (c *Cluster) Opts() ([]kgo.Opt, error) {
	return []kgo.Opt{kgo.SeedBrokers(c.Bootstrap...)}, nil
}
