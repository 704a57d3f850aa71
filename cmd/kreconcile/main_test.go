package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/reconcile"
)

// run runs kreconcile with args and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return clitest.Run(t, newApp(), "kreconcile", args...)
}

// seed builds the seed case in miniature: 30 records, the test mirror replays 5 of them, the
// group consumed 20 on the source and its target commit is where a sparse sync put it.
func seed(t *testing.T) (srcSeeds, dstSeeds, topic, group string, dst *kgo.Client) {
	t.Helper()
	s := seedBed(t)
	return s.srcSeeds, s.dstSeeds, s.topic, s.group, s.dst
}

// bed is the seed case with both clusters at hand: distinct cluster IDs ("kfake-source",
// "kfake-target"), as real clusters have, and the kfake handles for faults.
type bed struct {
	srcK, dstK         *kfake.Cluster
	src, dst           *kgo.Client
	srcSeeds, dstSeeds string
	topic, group       string
}

func seedBed(t *testing.T) *bed {
	t.Helper()
	b := &bed{topic: "orders", group: "orders-app"}
	p := testkit.NewPair(t, 1)
	b.srcK, b.src, b.srcSeeds = p.Source.Cluster, p.Source.Client, p.Source.Seeds
	b.dstK, b.dst, b.dstSeeds = p.Target.Cluster, p.Target.Client, p.Target.Seeds
	src, dst, topic, group := b.src, b.dst, b.topic, b.group
	for _, cl := range []*kgo.Client{src, dst} {
		if _, err := kadm.NewClient(cl).CreateTopic(clitest.Context(t), 1, 1, nil, topic); err != nil {
			t.Fatalf("create topic: %v", err)
		}
	}
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("order-%d", i))})
	}
	if err := src.ProduceSync(clitest.Context(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	var copies []*kgo.Record
	for _, i := range append(seq(0, 15), seq(10, 30)...) {
		copies = append(copies, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("order-%d", i))})
	}
	if err := dst.ProduceSync(clitest.Context(t), copies...).FirstErr(); err != nil {
		t.Fatalf("mirror: %v", err)
	}
	for _, c := range []struct {
		cl *kgo.Client
		at int64
	}{{src, 20}, {dst, 16}} {
		commitAt(t, c.cl, group, topic, c.at, "m")
	}
	return b
}

// commitAt commits offset at of partition 0 of topic for group on the cluster of cl.
func commitAt(t *testing.T, cl *kgo.Client, group, topic string, at int64, meta string) {
	t.Helper()
	testkit.Commit(t, kadm.NewClient(cl), group, topic, 0, at, meta)
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// targetCommit is group's commit on partition 0 of topic on the cluster of dst (0: none).
func targetCommit(t *testing.T, dst *kgo.Client, group, topic string) int64 {
	t.Helper()
	at, _, _ := testkit.Committed(t, kadm.NewClient(dst), group, topic, 0)
	return at
}

func TestGroupsPlanApplyRollback(t *testing.T) {
	srcSeeds, dstSeeds, topic, group, dst := seed(t)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}

	// Plan only: exit 1, JSON with the documented fields, nothing written.
	code, out, errOut := run(t, append(append([]string{"groups"}, conn...), "--format", "json")...)
	if code != 1 {
		t.Fatalf("plan exit: got %d, want 1 (stderr %q)", code, errOut)
	}
	var res reconcile.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(out), &raw)
	p0 := raw["groups"].([]any)[0].(map[string]any)["partitions"].([]any)[0].(map[string]any)
	for _, k := range []string{"topic", "target_topic", "partition", "source_committed", "source_end", "target_committed", "target_end", "checkpoint", "exact_target", "status", "redelivered_if_unchanged", "skipped_if_unchanged"} {
		if _, ok := p0[k]; !ok {
			t.Errorf("plan JSON: field %q missing", k)
		}
	}
	p := res.Groups[0].Partitions[0]
	if p.Status != reconcile.StatusBehind || p.ExactTarget == nil || *p.ExactTarget != 25 || p.RedeliveredIfUnchanged != 9 {
		t.Fatalf("plan: got %s E=%v redelivered=%d, want behind E=25 redelivered=9 (%s)", p.Status, p.ExactTarget, p.RedeliveredIfUnchanged, p.Reason)
	}
	if got := targetCommit(t, dst, group, topic); got != 16 {
		t.Fatalf("after a plan without --apply: target commit got %d, want 16 (untouched)", got)
	}

	// Usage errors exit 2.
	if code, _, _ := run(t, append(append([]string{"groups"}, conn...), "--allow-rewind")...); code != 2 {
		t.Errorf("--allow-rewind without --apply: got exit %d, want 2", code)
	}
	if code, _, _ := run(t, "groups", "--target-brokers", dstSeeds); code != 2 {
		t.Errorf("no source brokers: got exit %d, want 2", code)
	}

	// Apply: exit 0 (now exact), backup named on stderr.
	backup := filepath.Join(t.TempDir(), "b.json")
	code, _, errOut = run(t, append(append([]string{"groups"}, conn...), "--apply", "--backup", backup, "--format", "json")...)
	if code != 0 {
		t.Fatalf("apply exit: got %d, want 0 (stderr %q)", code, errOut)
	}
	if !strings.Contains(errOut, backup) {
		t.Errorf("apply stderr: got %q, want the backup file named", errOut)
	}
	if got := targetCommit(t, dst, group, topic); got != 25 {
		t.Fatalf("after --apply: target commit got %d, want 25", got)
	}
	// Second run: exact, exit 0, nothing written.
	if code, _, _ := run(t, append(append([]string{"groups"}, conn...), "--apply", "--format", "json")...); code != 0 {
		t.Errorf("second apply: got exit %d, want 0", code)
	}
	if m, _ := filepath.Glob("kreconcile-backup-*.json"); len(m) > 0 {
		t.Errorf("second apply wrote a backup %v, want none", m)
		for _, f := range m {
			os.Remove(f)
		}
	}

	// Rollback.
	if code, out, errOut := run(t, append(append([]string{"rollback"}, conn...), "--backup", backup)...); code != 0 {
		t.Fatalf("rollback: got exit %d, want 0 (%s %s)", code, out, errOut)
	}
	if got := targetCommit(t, dst, group, topic); got != 16 {
		t.Errorf("after rollback: target commit got %d, want 16", got)
	}
}

func TestHelpTeaches(t *testing.T) {
	code, out, _ := run(t, "groups", "--help")
	if code != 0 {
		t.Fatalf("help exit: got %d, want 0", code)
	}
	for _, want := range []string{"Exit status", "behind", "unmappable", "--apply", "rollback", "seed case", "Examples"} {
		if !strings.Contains(out, want) {
			t.Errorf("groups --help: %q missing", want)
		}
	}
}

func TestGroupsTable(t *testing.T) {
	srcSeeds, dstSeeds, _, group, _ := seed(t)
	code, out, errOut := run(t, "groups", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
	if code != 1 {
		t.Fatalf("exit: got %d, want 1 (stderr %q)", code, errOut)
	}
	if !strings.Contains(out, group) {
		t.Errorf("table: group %s missing:\n%s", group, out)
	}
	t.Log("\n" + out)
}

func TestGroupsApplyRefusesActiveGroup(t *testing.T) {
	srcSeeds, dstSeeds, topic, group, dst := seed(t)
	testkit.JoinGroup(t, dst, group, topic)
	backup := filepath.Join(t.TempDir(), "b.json")
	code, out, errOut := run(t, "groups", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--apply", "--backup", backup, "--format", "json")
	if code != 1 {
		t.Fatalf("exit: got %d, want 1 (stderr %q)", code, errOut)
	}
	if !strings.Contains(out, `"refused"`) || !strings.Contains(out, group) {
		t.Errorf("output: want the refusal naming %s:\n%s", group, out)
	}
	if got := targetCommit(t, dst, group, topic); got != 16 {
		t.Errorf("target commit: got %d, want 16 (nothing written)", got)
	}
	if _, err := os.Stat(backup); err == nil {
		t.Errorf("backup %s written, want none: nothing was to be written", backup)
	}
}

// TestGroupsNoneSelected: a plan that selects no group checked nothing: exit 2, naming the
// selection and the principal (a source lists only the groups a principal may describe), and
// with --apply no backup is written.
func TestGroupsNoneSelected(t *testing.T) {
	src, dst, _, _, _ := seed(t)
	backup := filepath.Join(t.TempDir(), "backup.json")
	code, out, errs := run(t, "groups", "--source-brokers", src, "--target-brokers", dst, "--group", "no-such-group", "--apply", "--backup", backup)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stdout %q stderr %q", code, out, errs)
	}
	for _, w := range []string{"no consumer group", "--group", "User:ANONYMOUS", "Describe"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr %q does not name %q", errs, w)
		}
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Errorf("backup %s written (stat: %v)", backup, err)
	}
}

// TestGroupsHiddenOffsets: a source group that exists with no member and shows no committed
// offset is refused (exit 2), not planned as nothing to do: Kafka hides, without an error,
// the offsets on topics the principal may not Describe.
func TestGroupsHiddenOffsets(t *testing.T) {
	b := seedBed(t)
	const group = "joined-never-committed"
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b.srcSeeds, ",")...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(b.topic), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx := clitest.Context(t)
	if fs := cl.PollRecords(ctx, 1); fs.Err() != nil {
		t.Fatalf("poll: %v", fs.Err())
	}
	cl.Close() // leaves the group: Empty, no offsets
	d, err := kadm.NewClient(b.src).DescribeGroups(ctx, group)
	if err != nil || d[group].State != "Empty" {
		t.Fatalf("group %s on the source: %+v %v, want Empty", group, d[group], err)
	}
	code, out, errs := run(t, "groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds, "--group", group)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stdout %q stderr %q", code, out, errs)
	}
	for _, w := range []string{group, "no committed offset", "Describe", "Topic"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr %q does not name %q", errs, w)
		}
	}
}
