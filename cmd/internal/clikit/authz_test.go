package clikit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/kconn"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestAuthzHint: an authorization failure, wrapped or flattened to text, is explained with
// the resource type, its operations and the principal of each cluster; other errors are not.
func TestAuthzHint(t *testing.T) {
	recordPrincipals(&Conn{
		Source: &mm2.Cluster{Alias: "src", Bootstrap: []string{"a:1"}, Security: kconn.Security{Protocol: "SASL_PLAINTEXT", SASLUser: "kverify"}},
		Target: &mm2.Cluster{Alias: "dst", Bootstrap: []string{"b:1"}, Security: kconn.Security{Protocol: "PLAINTEXT"}},
	})
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{fmt.Errorf("list end offsets of topic orders on target: %w", kerr.TopicAuthorizationFailed), []string{"TOPIC_AUTHORIZATION_FAILED", "Topic", "Read", "--topic", "cluster src as User:kverify", "cluster dst as User:ANONYMOUS"}},
		{errors.New(`target cluster: describe group "g": GROUP_AUTHORIZATION_FAILED: Not authorized`), []string{"Group", "Describe", "--group"}},
		{fmt.Errorf("acls: %w", kerr.ClusterAuthorizationFailed), []string{"Cluster", "Alter", "--cluster"}},
		{errors.New(`group "g" shows no committed offset: Kafka leaves out the offsets on topics the principal may not Describe`), []string{"no error from the broker", "Topic", "Describe", "User:kverify"}},
	} {
		h := AuthzHint(tc.err)
		for _, w := range tc.want {
			if !strings.Contains(h, w) {
				t.Errorf("hint for %v: %q does not name %q", tc.err, h, w)
			}
		}
	}
	if h := AuthzHint(errors.New("connection refused")); h != "" {
		t.Errorf("hint for a connection error: %q", h)
	}
}

// TestAuthzExit: a denied operation exits 2 with the hint, even from an action that would
// report differences (exit 1).
func TestAuthzExit(t *testing.T) {
	for _, wrap := range []func(error) error{Fail, DiffersErr, func(e error) error { return e }} {
		var errb bytes.Buffer
		app := &cli.App{Name: "ktool", ErrWriter: &errb, Action: func(*cli.Context) error {
			return wrap(fmt.Errorf("fetch topic orders: %w", kerr.TopicAuthorizationFailed))
		}}
		if code := MainContext(t.Context(), app, []string{"ktool"}); code != ExitError {
			t.Errorf("exit %d, want %d", code, ExitError)
		}
		if !strings.Contains(errb.String(), "authorization failed (TOPIC_AUTHORIZATION_FAILED)") {
			t.Errorf("stderr %q has no hint", errb.String())
		}
	}
}
