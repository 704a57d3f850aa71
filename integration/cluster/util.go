package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math/big"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	startTimeout = 4 * time.Minute // StartT's deadline for a whole cluster on a busy 2-core machine
	tailLines    = 40
)

var (
	portMu   sync.Mutex
	portUsed = map[int]bool{}
)

// freePort returns a port that is free on 127.0.0.1 now and was not handed out before in this
// process. It draws from 20000-32767, below Linux's ephemeral range, so that an outgoing
// connection cannot take it between this check and the JVM's bind.
func freePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 200 {
		n, err := rand.Int(rand.Reader, big.NewInt(32768-20000))
		if err != nil {
			return 0, err
		}
		p := 20000 + int(n.Int64())
		if portUsed[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ln.Close()
		portUsed[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in 20000-32767 after 200 tries")
}

// props renders Java properties with sorted keys.
func props(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, m[k])
	}
	return b.Bytes()
}

// newClusterID is a KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
func newClusterID() (string, error) {
	// An id that starts with '-' reads as an option to StorageTool's -t (1 in 64 ids): draw again.
	for {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id, nil
		}
	}
}

// Tail returns the last n lines of a file, or a note saying why it cannot.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
