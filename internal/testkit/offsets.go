package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Commit commits offset at, with metadata meta, for group on partition p of topic, as a
// group without members does; an error fails the test.
func Commit(t testing.TB, adm *kadm.Client, group, topic string, p int32, at int64, meta string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs := make(kadm.Offsets)
	offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1, Metadata: meta})
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s %s/%d=%d: %v", group, topic, p, at, err)
	}
}

// Committed returns group's committed offset on partition p of topic and its metadata; ok is
// false when there is none (the group is not known, or commits nothing there). An error
// fails the test.
func Committed(t testing.TB, adm *kadm.Client, group, topic string, p int32) (at int64, meta string, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err == kerr.GroupIDNotFound { // kadm returns the error of the code, not a wrapping
		return 0, "", false
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	o, found := resp.Lookup(topic, p)
	if !found || o.At < 0 {
		return 0, "", false
	}
	return o.At, o.Metadata, true
}
