package groupsync_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmigrate/kmigrate/mirror/groupsync"
)

// TestReportErrorValues: a failed write is in the report as text and as a *SyncError that
// errors.Is and errors.As see through (the step and the broker's error), and the JSON form
// carries only the text.
func TestReportErrorValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The source topic exists, its target copy does not: the commit on the target fails for
	// that partition, the checkpoint (on its own topic) is written.
	if _, err := e.srcAdm.CreateTopic(e.ctx, 1, 1, nil, "c"); err != nil {
		t.Fatal(err)
	}
	e.tr.mirrored("c", 0, 10, 0)
	e.commitSource("g", "c", 0, 4, "")
	cfg := e.config()
	cfg.CheckpointsReplicationFactor = 3 // above kfake's one broker: no checkpoints this pass
	rep, err := groupsync.SyncOnce(e.ctx, cfg)
	if err != nil {
		t.Fatalf("SyncOnce: %v", err)
	}
	pr := wantPartition(t, rep, "g", "c", 0, groupsync.StatusError, groupsync.StatusDisabled)
	if !errors.Is(pr.Err, groupsync.ErrCommit) || !errors.Is(pr.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("partition Err %v: want ErrCommit and UNKNOWN_TOPIC_OR_PARTITION through errors.Is", pr.Err)
	}
	var se *groupsync.SyncError
	if !errors.As(pr.Err, &se) || se.Cluster != "target" || se.Group != "g" || se.Topic != prefix+"c" || se.Partition != 0 {
		t.Fatalf("errors.As: got %+v, want target cluster, group g, %sc/0", se, prefix)
	}
	if pr.Error != pr.Err.Error() {
		t.Errorf("Error %q and Err %q differ", pr.Error, pr.Err)
	}
	if !errors.Is(rep.Err, groupsync.ErrCheckpointsTopic) || rep.Error == "" || errors.Is(rep.Err, groupsync.ErrCommit) {
		t.Errorf("pass Err %v (Error %q): want ErrCheckpointsTopic only", rep.Err, rep.Error)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"Err"`) || !strings.Contains(string(b), `"error":`) {
		t.Errorf("JSON %s: want the error texts only", b)
	}
}

// A denied operation anywhere in a pass (the pass, a group, a partition) is returned by Run's
// check; other failures are not.
func TestDenied(t *testing.T) {
	deny := &groupsync.SyncError{Step: groupsync.ErrCommit, Err: kerr.GroupAuthorizationFailed}
	other := &groupsync.SyncError{Step: groupsync.ErrCommit, Err: kerr.CoordinatorNotAvailable}
	cases := []struct {
		name string
		rep  groupsync.Report
		want bool
	}{
		{"clean", groupsync.Report{Groups: []groupsync.GroupReport{{Group: "g"}}}, false},
		{"retriable group error", groupsync.Report{Groups: []groupsync.GroupReport{{Group: "g", Err: other}}}, false},
		{"denied group", groupsync.Report{Groups: []groupsync.GroupReport{{Group: "g", Err: deny}}}, true},
		{"denied partition", groupsync.Report{Groups: []groupsync.GroupReport{{Group: "g", Partitions: []groupsync.PartitionReport{{Err: deny}}}}}, true},
		{"denied checkpoints topic", groupsync.Report{Err: &groupsync.SyncError{Step: groupsync.ErrCheckpointsTopic, Err: kerr.TopicAuthorizationFailed}}, true},
	}
	for _, c := range cases {
		if got := groupsync.Denied(c.rep, nil) != nil; got != c.want {
			t.Errorf("%s: denied %v, want %v", c.name, got, c.want)
		}
	}
}
