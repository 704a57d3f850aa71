package mirror

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestOpName(t *testing.T) {
	for op, want := range map[kadm.ACLOperation]string{
		kadm.OpRead: "Read", kadm.OpDescribeConfigs: "DescribeConfigs", kadm.OpAlterConfigs: "AlterConfigs", kadm.OpCreate: "Create",
	} {
		if got := opName(op); got != want {
			t.Errorf("opName(%v) = %q, want %q", op, got, want)
		}
	}
}

// A topic that the flow's topics names literally and the source does not show stops the
// start (it does not exist, or Kafka hides it from the principal); a pattern does not.
func TestCheckLiteralTopics(t *testing.T) {
	e := &accessCheck{cfg: &Config{SourceAlias: "A", Topics: []string{"orders", `pay\..*`, "audit.log"}}}
	if err := e.checkLiteralTopics(map[string]int{"orders": 3, "audit.log": 1}); err != nil {
		t.Fatalf("every literal topic visible: %v", err)
	}
	err := e.checkLiteralTopics(map[string]int{"orders": 3})
	if err == nil {
		t.Fatal("audit.log not shown by the source: no error")
	}
	for _, w := range []string{"source cluster A", "audit.log", "the principal may not Describe", "Read"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
	if strings.Contains(err.Error(), "pay") {
		t.Errorf("a pattern that matches nothing is named: %v", err)
	}
	e.cfg.Topics = []string{".*"}
	if err := e.checkLiteralTopics(map[string]int{}); err != nil {
		t.Errorf("the default pattern matching nothing: %v", err)
	}
}

func TestDeniedErr(t *testing.T) {
	err := deniedErr("target", "B", kerr.TopicAuthorizationFailed, kadm.OpWrite, "Topic", "orders", "produce into it")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("%v does not wrap TOPIC_AUTHORIZATION_FAILED", err)
	}
	for _, w := range []string{"target cluster B", "Write on Topic:orders", "produce into it", "--operation Write --topic orders", "nothing was written"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
}
