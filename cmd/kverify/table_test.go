package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestDiffCompactedCommand: kverify diff on a compacted topic whose target kept only the
// latest record of every key exits 0 and says it judged a table, with the records each side
// compacted counted apart; a lost key exits 1 naming it; --judge log shows the records the
// target's cleaner removed as missing; --from on a table is refused, exit 2.
func TestDiffCompactedCommand(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	table := func(lose bool) string {
		topic := testkit.TopicName("settings")
		testkit.CreateTopic(t, src, topic, 1, compact)
		testkit.CreateTopic(t, dst, topic, 1, compact)
		var all, latest []*kgo.Record
		for i := range 600 {
			r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%6), Value: fmt.Appendf(nil, "v%d", i)}
			all = append(all, r)
			if i >= 594 && !(lose && i == 599) {
				latest = append(latest, &kgo.Record{Key: r.Key, Value: r.Value})
			}
		}
		testkit.Produce(t, src, topic, 0, all...)
		testkit.Produce(t, dst, topic, 0, latest...)
		return topic
	}
	same, lost := table(false), table(true)

	code, out, errs := run(t, append([]string{"diff", "--topic", same, "--quiet"}, conn...)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stdout %s stderr: %s", code, out, errs)
	}
	for _, want := range []string{"IDENTICAL", "judged as a table", "6 keys with the same latest record", "600 records on the source, 6 records on the target", "594 on the source"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, append([]string{"diff", "--topic", lost, "--quiet"}, conn...)...)
	if code != 1 || !strings.Contains(out, "1 key missing") || !strings.Contains(out, "source 599") {
		t.Errorf("a lost key: exit %d, want 1 naming source offset 599:\n%s", code, out)
	}
	code, out, _ = run(t, append([]string{"diff", "--topic", same, "--quiet", "--judge", "log"}, conn...)...)
	if code != 1 || !strings.Contains(out, "594 missing") {
		t.Errorf("judged as a log: exit %d, want 1 with 594 missing:\n%s", code, out)
	}
	code, _, errs = run(t, append([]string{"diff", "--topic", same, "--quiet", "--from", "5"}, conn...)...)
	if code != 2 || !strings.Contains(errs, "needs whole partitions") {
		t.Errorf("--from on a table: exit %d, want 2 with a refusal; stderr: %s", code, errs)
	}
}
