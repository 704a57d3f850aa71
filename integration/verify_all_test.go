package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/verify"
)

// TestVerifyAll runs kverify diff --all on real brokers: three topics of Kafka 2.3.0 mirrored
// by MirrorMaker 2 3.7.1 to Kafka 3.7.1. With MM2 stopped, one copy is damaged (records
// written directly to it) and a topic of the flow is created that was never mirrored. --all
// with the MM2 file then gives each topic its verdict (exit 1), and two shards joined by
// kverify merge give the same verdict, topic by topic, as the whole run. $KMIGRATE_PAIR
// (pair_test.go) picks other versions.
func TestVerifyAll(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: "va-source"})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: "va-destination"})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	orders, payments, audit, late := "va-orders-"+run, "va-payments-"+run, "va-audit-"+run, "va-late-"+run
	parts := map[string]int32{orders: 3, payments: 2, audit: 1}
	base := time.Now().Add(-time.Hour)
	for topic, n := range parts {
		bedCreateTopic(t, src, topic, n, nil)
		for p := int32(0); p < n; p++ {
			bedProduce(ctx, t, src, topic, p, vfRecords(fmt.Sprintf("%s-%d", topic, p), 0, 200, base))
		}
	}
	props := vfProperties(src, dst, "va-.*-"+run)
	propsFile := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	mm := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "destination"})
	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	for topic := range parts {
		vfWaitIdentical(ctx, t, srcCl, dstCl, topic, mm.LogPath())
	}
	if err := mm.Stop(ctx); err != nil {
		t.Fatalf("stop MirrorMaker 2: %v", err)
	}
	// The damage: 4 records written directly to the copy of payments, partition 1; and a
	// topic of the flow the stopped mirror never copied.
	var direct []*kgo.Record
	for i := 0; i < 4; i++ {
		direct = append(direct, &kgo.Record{Key: []byte("new-app"), Value: fmt.Appendf(nil, "written directly %d", i)})
	}
	bedProduce(ctx, t, dst, payments, 1, direct)
	bedCreateTopic(t, src, late, 2, nil)
	bedProduce(ctx, t, src, late, 0, vfRecords("late", 0, 7, base))

	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	code, out, errs := bedOutput(t, bin, "diff", "--mm2-config", propsFile, "--all", "--format", "json", "--quiet")
	if code != 1 {
		t.Fatalf("kverify diff --all: exit %d, want 1\nstderr: %s\nstdout: %s", code, errs, out)
	}
	whole := vaDecode(t, out)
	bedReport(t, "verify-all-kverify", whole)
	want := map[string]verify.DiffStatus{orders: verify.StatusIdentical, audit: verify.StatusIdentical,
		payments: verify.StatusDiffers, late: verify.StatusDiffers}
	if got := vaStatuses(whole); !reflect.DeepEqual(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if c := whole.Total.Counts; c.Matched != 6*200 || c.Extra != 4 || c.Missing != 7 || c.Duplicated+c.Mismatched != 0 || whole.Total.Partitions != 8 {
		t.Errorf("total %+v, want 1200 matched, 4 extra, 7 missing in 8 partitions", whole.Total)
	}

	t.Run("two shards and merge give the same verdict", func(t *testing.T) {
		dir := t.TempDir()
		var files []string
		covered := 0
		for i := 0; i < 2; i++ {
			f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
			code, _, errs := bedOutput(t, bin, "diff", "--mm2-config", propsFile, "--all", "--shard", fmt.Sprintf("%d/2", i), "--format", "json", "--out", f, "--quiet")
			if code != 0 && code != 1 {
				t.Fatalf("shard %d/2: exit %d: %s", i, code, errs)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			covered += vaDecode(t, string(data)).Total.Partitions
			files = append(files, f)
		}
		if covered != whole.Total.Partitions {
			t.Errorf("the shards cover %d partitions, the whole run %d", covered, whole.Total.Partitions)
		}
		code, out, errs := bedOutput(t, bin, append([]string{"merge", "--format", "json"}, files...)...)
		if code != 1 {
			t.Fatalf("kverify merge: exit %d, want 1\nstderr: %s\nstdout: %s", code, errs, out)
		}
		merged := vaDecode(t, out)
		bedReport(t, "verify-all-merged-kverify", merged)
		if !reflect.DeepEqual(vaStatuses(merged), want) || merged.Total != whole.Total || merged.MergedShards != 2 {
			t.Errorf("merged: statuses %v total %+v (shards %d); whole run: %v %+v", vaStatuses(merged), merged.Total, merged.MergedShards, want, whole.Total)
		}
		if code, _, errs := bedOutput(t, bin, "merge", files[0]); code != 2 {
			t.Errorf("merge of one of two shards: exit %d (%s), want 2", code, errs)
		}
	})
}

func vaDecode(t *testing.T, out string) *verify.MultiResult {
	t.Helper()
	mr, err := verify.ParseMultiResult([]byte(out))
	if err != nil {
		t.Fatalf("kverify output: %v\n%s", err, out)
	}
	return mr
}

func vaStatuses(mr *verify.MultiResult) map[string]verify.DiffStatus {
	out := map[string]verify.DiffStatus{}
	for _, tr := range mr.Topics {
		out[tr.SourceTopic] = tr.Status
	}
	return out
}
