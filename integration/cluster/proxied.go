package cluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/kmigrate/kmigrate/internal/netfault"
)

// Proxied is implemented by jvm clusters. Those started without Spec.Proxied have no
// proxies (use ProxiesOf).
type Proxied interface {
	// Proxies are the brokers' client proxies, by broker index (nil without Spec.Proxied).
	Proxies() []*netfault.Proxy
	// Direct lists every broker's direct listener, the one brokers use between themselves. A
	// client bootstrapped there learns direct addresses only: its traffic never meets a
	// fault (the steady producer and the checks of a fault test).
	Direct() []string
}

// ProxiesOf returns c's proxies and direct addresses when it was started with Spec.Proxied.
func ProxiesOf(c Cluster) ([]*netfault.Proxy, []string, bool) {
	p, ok := c.(Proxied)
	if !ok || p.Proxies() == nil {
		return nil, nil, false
	}
	return p.Proxies(), p.Direct(), true
}

// errProxiedSpec is returned for Spec.Proxied where it is not built.
var errProxiedSpec = errors.New("Spec.Proxied runs on the jvm provider, plaintext, only")

// Proxies implements Proxied.
func (c *jvmCluster) Proxies() []*netfault.Proxy {
	if !c.spec.Proxied {
		return nil
	}
	out := make([]*netfault.Proxy, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.proxy
	}
	return out
}

// Direct implements Proxied.
func (c *jvmCluster) Direct() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr()
	}
	return out
}

// newProxy draws the broker's client port and starts its proxy (Spec.Proxied).
func (c *jvmCluster) newProxy(n *jvmNode) error {
	var err error
	if n.clientPort, err = freePort(); err != nil {
		return err
	}
	up := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.clientPort))
	if n.proxy, err = netfault.New(up); err != nil {
		return fmt.Errorf("cluster %s: proxy for broker %d: %w", c.spec.Name, n.id-1, err)
	}
	return nil
}

// proxiedListeners sets a proxied node's listeners: CLIENT (advertised at its proxy) and
// INTERNAL, direct, between brokers; KRaft's CONTROLLER stays as it is.
func (c *jvmCluster) proxiedListeners(m map[string]string, n *jvmNode) {
	client := fmt.Sprintf("CLIENT://127.0.0.1:%d", n.clientPort)
	internal := fmt.Sprintf("INTERNAL://127.0.0.1:%d", n.port)
	m["listeners"] = client + "," + internal
	m["advertised.listeners"] = fmt.Sprintf("CLIENT://127.0.0.1:%d,%s", n.proxy.Port(), internal)
	m["listener.security.protocol.map"] = "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT"
	m["inter.broker.listener.name"] = "INTERNAL"
	if isKRaft(c.spec.Version) {
		m["listeners"] += fmt.Sprintf(",CONTROLLER://127.0.0.1:%d", n.ctrlPort)
		m["listener.security.protocol.map"] += ",CONTROLLER:PLAINTEXT"
	}
}

// closeProxies closes every broker's proxy.
func (c *jvmCluster) closeProxies() {
	for _, n := range c.nodes {
		if n.proxy != nil {
			n.proxy.Close()
		}
	}
}
