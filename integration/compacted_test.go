package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

// A compacted topic copied by kmirror between the clusters of KMIGRATE_PAIR (2.3.0 to 3.7.1
// unless set) whose target cleaner ran (small
// segments and a low dirty ratio on the target only), while the source kept every record.
// Keys repeat (41 keys over 6,000 records); each value carries the record's source sequence
// number, so that a reader on the target can tell which source record it reads.
//   - kverify diff judges the table: identical, with the records the target cleaned counted
//     apart on each side, exit 0;
//   - a group committed at G on the source, inside the cleaned history (the copy of G-1 is
//     gone from the target), is switched by kreconcile groups --apply, and a consumer of the
//     group on the target reads exactly the records it had left that the target still holds:
//     every one whose sequence number is G or more, none below.
func TestCompactedTopicMoved(t *testing.T) {
	bedParallel(t)
	bins := bedBuild(t, "kmirror", "kreconcile", "kverify")
	sv, dv := bedPair(t)
	sName, dName := bedPairNames("ct", sv, dv)
	src := cluster.StartT(t, cluster.Spec{Version: sv, Name: sName})
	dst := cluster.StartT(t, cluster.Spec{Version: dv, Name: dName})
	ctx := bedCtx(t, 8*time.Minute)
	topic, group := bedUnique("settings"), bedUnique("settings-reader")
	const n, keys, g = 6000, 41, 3000
	bedCreateTopic(t, src, topic, 1, map[string]*string{"cleanup.policy": bedPtr("compact")})
	// The target cleans at once: segments rolled every 100 ms, cleaned when 1% is dirty.
	bedCreateTopic(t, dst, topic, 1, map[string]*string{"cleanup.policy": bedPtr("compact"), "segment.bytes": bedPtr("1048576"),
		"segment.ms": bedPtr("100"), "min.cleanable.dirty.ratio": bedPtr("0.01"), "delete.retention.ms": bedPtr("100")})
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%keys), Value: fmt.Appendf(nil, "%d", i)})
	}
	bedProduce(ctx, t, src, topic, 0, recs)
	rcCommit(t, src, group, topic, 0, g, "")

	props := mirProps(t, src, dst, "source", "target", topic)
	m := mirStart(t, filepath.Join(bins, "kmirror"), props, "source->target", "kmirror-"+topic)
	bedWaitFor(ctx, t, 300*time.Millisecond, "kmirror to copy the topic", func() string {
		if e := bedEndOffsets(ctx, t, dst, topic)[0]; e < n {
			return fmt.Sprintf("target ends at %d", e)
		}
		return ""
	})
	// A record after the copy rolls the target's last segment, and the cleaner runs. kmirror
	// stops once it copied that record: no transaction of its stays open to hold the last
	// stable offset, below which the records are counted, back.
	bedProduce(ctx, t, src, topic, 0, []*kgo.Record{{Key: []byte("roll"), Value: []byte(strconv.Itoa(n))}})
	bedWaitFor(ctx, t, 300*time.Millisecond, "kmirror to copy the last record", func() string {
		if recs := bedReadPartition(ctx, t, dst, topic, 0, 0); len(recs) == 0 || string(recs[len(recs)-1].Key) != "roll" {
			return "the last record on the target is not the one that rolls the segment"
		}
		return ""
	})
	m.term(t)
	bedWaitFor(ctx, t, time.Second, "the target's cleaner to compact the copy", func() string {
		if got := bedRecordsFrom(ctx, t, dst, topic, 0, 0); got > 2*keys {
			return fmt.Sprintf("target holds %d records", got)
		}
		return ""
	})

	code, out, errOut := bedOutput(t, filepath.Join(bins, "kverify"), "diff", "--mm2-config", props, "--flow", "source->target", "--topic", topic, "--format", "json", "--quiet")
	var vr verify.Result
	if err := json.Unmarshal([]byte(out), &vr); err != nil || code != 0 || !vr.Identical || vr.Judged != verify.JudgeTable || len(vr.Tables) != 1 {
		t.Fatalf("kverify diff: exit %d, want 0 and an identical table (%v)\n%s\n%s", code, err, errOut, out)
	}
	tp := vr.Tables[0]
	t.Logf("kverify diff: %s; source %d records, target %d; %d keys the same; superseded %d on the source, %d on the target",
		vr.JudgedWhy, tp.SourceRecords, tp.TargetRecords, tp.Same, tp.SourceSuperseded, tp.TargetSuperseded)
	if tp.SourceRecords != n+1 || tp.TargetRecords > 2*keys || tp.SourceSuperseded != tp.SourceRecords-tp.Same || tp.Missing+tp.Extra+tp.Differing != 0 {
		t.Errorf("kverify's table: %+v; want the source's %d records, the target's %d or fewer, no key missing, extra or differing", tp, n+1, 2*keys)
	}

	code, out, errOut = bedOutput(t, filepath.Join(bins, "kreconcile"), "groups", "--mm2-config", props, "--flow", "source->target",
		"--group", group, "--apply", "--backup", filepath.Join(t.TempDir(), "backup.json"), "--format", "json")
	var rr reconcile.Result
	if err := json.Unmarshal([]byte(out), &rr); err != nil || code != 0 || len(rr.Groups) != 1 || !rr.Groups[0].Applied {
		t.Fatalf("kreconcile groups --apply: exit %d (%v)\n%s\n%s", code, err, errOut, out)
	}
	p := rr.Groups[0].Partitions[0]
	t.Logf("kreconcile: G=%d E=%s (%s): %s", p.SourceCommitted, fmtOff(p.ExactTarget), p.ProofSource, p.Proof)
	if !strings.Contains(p.Proof, "gone from a log") {
		t.Errorf("the proof does not say the copy of G-1 was cleaned away: %s", p.Proof)
	}

	// What the target holds from G on, then what the group reads there, as a consumer of it
	// does (no commit), until it has read that many records or 30 s passed.
	want := map[int]bool{}
	for _, r := range bedReadPartition(ctx, t, dst, topic, 0, 0) {
		if seq, _ := strconv.Atoi(string(r.Value)); seq >= g {
			want[seq] = true
		}
	}
	cl := bedClient(t, dst.Bootstrap(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var below []int
	read := map[int]bool{}
	for len(read) < len(want) && rctx.Err() == nil {
		cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) {
			seq, _ := strconv.Atoi(string(r.Value))
			if seq < g {
				below = append(below, seq)
				return
			}
			read[seq] = true
		})
	}
	cl.Close()
	missed := 0
	for seq := range want {
		if !read[seq] {
			missed++
		}
	}
	t.Logf("the switched group read %d records of sequence %d or more (the target holds %d), %d from below G", len(read), g, len(want), len(below))
	if len(below) > 0 || missed > 0 {
		t.Errorf("the group read %d records from below G (%v) and missed %d of the %d it had left on the target", len(below), below, missed, len(want))
	}
}
