package clikit

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmigrate/kmigrate/mm2"
)

// loggedIn are the principals the command's clusters see it as ("cluster source as
// User:kverify"), recorded by Connect so that an authorization error names them. A command
// process connects once; the last Connect wins.
var loggedIn struct {
	mu    sync.Mutex
	sides []string
}

// recordPrincipals notes the principal of each side of conn for AuthzHint.
func recordPrincipals(conn *Conn) {
	var sides []string
	for _, cl := range []*mm2.Cluster{conn.Source, conn.Target} {
		if cl != nil && len(cl.Bootstrap) > 0 {
			sides = append(sides, fmt.Sprintf("cluster %s as %s", cl.Alias, Principal(cl)))
		}
	}
	loggedIn.mu.Lock()
	loggedIn.sides = sides
	loggedIn.mu.Unlock()
}

// Principal is the Kafka principal the brokers of cl authorize the command as with Kafka's
// default principal builder: User:<SASL user> over SASL; over TLS with a client certificate,
// User:<its subject> (brokers may map it with ssl.principal.mapping.rules); else
// User:ANONYMOUS.
func Principal(cl *mm2.Cluster) string {
	s := cl.Security
	p := strings.ToUpper(s.Protocol)
	switch {
	case strings.HasPrefix(p, "SASL_") && s.SASLUser != "":
		return "User:" + s.SASLUser
	case p == "SSL" && (s.CertFile != "" || s.CertPEM != "" || s.KeystoreFile != ""):
		return "User:<the subject of the client certificate>"
	}
	return "User:ANONYMOUS"
}

// authzKinds are the authorization errors of the Kafka protocol: the resource type the broker
// denied and what each operation on it is for.
var authzKinds = []struct {
	err      error
	resource string
	flag     string // kafka-acls' flag for the resource
	ops      string
	// also is text of kmigrate's own errors for a denial Kafka hides (an offset fetch leaves
	// out the topics the principal may not Describe): "" for none.
	also string
}{
	{kerr.TopicAuthorizationFailed, "Topic", "--topic", "Describe (metadata, list offsets, fetch committed offsets), Read (fetch, commit offsets), Write (produce), Create (create topics), DescribeConfigs, AlterConfigs", "the principal may not Describe"},
	{kerr.GroupAuthorizationFailed, "Group", "--group", "Describe (list, describe, fetch offsets), Read (join, commit offsets), Delete (delete offsets)", ""},
	{kerr.ClusterAuthorizationFailed, "Cluster", "--cluster", "Describe (describe ACLs, list every group), Alter (create or delete ACLs), Create (create topics), DescribeConfigs, IdempotentWrite", ""},
	{kerr.TransactionalIDAuthorizationFailed, "TransactionalId", "--transactional-id", "Write (transactions), Describe", ""},
}

// AuthzHint explains an authorization failure in err, or returns "" when err is none: the
// resource type the brokers denied (the resource itself is named by the error's own text),
// the operations on that type, and the principal on each cluster. Errors that were flattened
// to text are recognized by the protocol's error name.
func AuthzHint(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	for _, k := range authzKinds {
		name := k.err.(*kerr.Error).Message
		switch {
		case errors.Is(err, k.err) || strings.Contains(text, name):
		case k.also != "" && strings.Contains(text, k.also):
			name = "no error from the broker: it hid what the principal may not see"
		default:
			continue
		}
		loggedIn.mu.Lock()
		who := strings.Join(loggedIn.sides, ", ")
		loggedIn.mu.Unlock()
		if who == "" {
			who = "(not connected yet)"
		}
		return fmt.Sprintf("authorization failed (%s): the brokers denied an operation on the %s named above to this command's principal (%s); "+
			"the operations on a %s: %s. Grant what the \"Least privilege\" table of docs/security.md lists for this command (kafka-acls --add --allow-principal User:... --operation ... %s ...)",
			name, k.resource, who, k.resource, k.ops, k.flag)
	}
	return ""
}
