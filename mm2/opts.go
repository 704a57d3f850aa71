package mm2

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/kconn"
)

// Opts returns the franz-go options that connect to c, built by kconn from its alias, bootstrap
// servers and Security. A cluster without bootstrap servers is refused with the key and flags
// that set them.
func (c *Cluster) Opts() ([]kgo.Opt, error) {
	if len(c.Bootstrap) == 0 {
		return nil, fmt.Errorf("cluster %s has no bootstrap servers: set %s.bootstrap.servers in the MM2 file or pass --source-brokers/--target-brokers", c.Alias, c.Alias)
	}
	return kconn.Config{Name: c.Alias, Bootstrap: c.Bootstrap, Security: c.Security}.Opts()
}
