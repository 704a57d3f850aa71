package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

// rec and recs are testkit's synthetic partition.
var (
	rec  = testkit.Record
	recs = testkit.Records
)

// run runs kverify with args and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return clitest.Run(t, app(), "kverify", args...)
}

// The JSON fields of kverify diff's result, exactly so.
type jsonResult struct {
	SourceTopic string `json:"source_topic"`
	TargetTopic string `json:"target_topic"`
	Identical   bool   `json:"identical"`
	Summary     struct {
		Matched, Missing, Duplicated, Mismatched, Extra int64
	} `json:"summary"`
	Partitions []struct {
		Partition                                       int32 `json:"partition"`
		Matched, Missing, Duplicated, Mismatched, Extra int64
		MissingRanges                                   []map[string]int64 `json:"missing_ranges"`
		Duplicates                                      []map[string]int64 `json:"duplicates"`
		Mismatches                                      []struct {
			SourceOffset int64    `json:"source_offset"`
			TargetOffset int64    `json:"target_offset"`
			Fields       []string `json:"fields"`
		} `json:"mismatches"`
		ExtraRanges []map[string]int64 `json:"extra_ranges"`
	} `json:"partitions"`
	Problems []string `json:"problems"`
}

func decode(t *testing.T, out string) jsonResult {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"source_topic", "target_topic", "identical", "summary", "partitions"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON has no %q field", k)
		}
	}
	var sum map[string]json.RawMessage
	json.Unmarshal(raw["summary"], &sum)
	for _, k := range []string{"matched", "missing", "duplicated", "mismatched", "extra"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary has no %q field", k)
		}
	}
	var parts []map[string]json.RawMessage
	json.Unmarshal(raw["partitions"], &parts)
	for _, p := range parts {
		for _, k := range []string{"partition", "matched", "missing", "duplicated", "mismatched", "extra", "missing_ranges", "duplicates", "mismatches", "extra_ranges"} {
			if _, ok := p[k]; !ok {
				t.Errorf("partition has no %q field", k)
			}
		}
	}
	var r jsonResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDiffCommand(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}

	same := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, same, 2, nil)
	testkit.CreateTopic(t, dst, same, 2, nil)
	testkit.Produce(t, src, same, 0, recs(0, 49)...)
	testkit.Produce(t, src, same, 1, recs(50, 59)...)
	testkit.Produce(t, dst, same, 0, recs(0, 49)...)
	testkit.Produce(t, dst, same, 1, recs(50, 59)...)

	faulty := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, faulty, 1, nil)
	testkit.CreateTopic(t, dst, faulty, 1, nil)
	testkit.Produce(t, src, faulty, 0, recs(0, 29)...)
	altered := rec(20)
	altered.Value = []byte("re-encoded")
	testkit.Produce(t, dst, faulty, 0, slices.Concat(recs(0, 4), recs(7, 14), recs(12, 14), recs(15, 19), []*kgo.Record{altered}, recs(21, 29),
		[]*kgo.Record{{Value: []byte("written directly")}})...)

	lonely := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, lonely, 1, nil)
	testkit.Produce(t, src, lonely, 0, recs(0, 3)...)

	t.Run("identical exits 0", func(t *testing.T) {
		mapFile := filepath.Join(t.TempDir(), "map.json")
		code, out, errs := run(t, append([]string{"diff", "--topic", same, "--format", "json", "--offset-map", mapFile}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d, want 0; stderr: %s", code, errs)
		}
		r := decode(t, out)
		if !r.Identical || r.Summary.Matched != 60 || r.SourceTopic != same || r.TargetTopic != same {
			t.Errorf("got %+v, want identical with 60 matched", r)
		}
		om, err := offsetmap.ReadFile(mapFile)
		if err != nil {
			t.Fatalf("read offset map: %v", err)
		}
		if got := om.Partition(1).ExactTarget(5); !got.Known || got.Target != 5 {
			t.Errorf("offset map: ExactTarget(5) on partition 1 = %+v, want 5", got)
		}
	})
	t.Run("differences exit 1 at the exact offsets", func(t *testing.T) {
		code, out, errs := run(t, append([]string{"diff", "--topic", faulty, "--format", "json", "--quiet"}, conn...)...)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr: %s", code, errs)
		}
		r := decode(t, out)
		p := r.Partitions[0]
		if r.Identical || p.Matched != 27 || p.Missing != 2 || p.Duplicated != 3 || p.Mismatched != 1 || p.Extra != 1 {
			t.Errorf("got %+v, want 27 matched, 2 missing, 3 duplicated, 1 mismatched, 1 extra", p)
		}
		if want := []map[string]int64{{"source_from": 5, "source_to": 6}}; !reflect.DeepEqual(p.MissingRanges, want) {
			t.Errorf("missing_ranges: got %v, want %v", p.MissingRanges, want)
		}
		if want := []map[string]int64{{"target_offset": 13, "source_offset": 12}, {"target_offset": 14, "source_offset": 13}, {"target_offset": 15, "source_offset": 14}}; !reflect.DeepEqual(p.Duplicates, want) {
			t.Errorf("duplicates: got %v, want %v", p.Duplicates, want)
		}
		if len(p.Mismatches) != 1 || p.Mismatches[0].SourceOffset != 20 || p.Mismatches[0].TargetOffset != 21 || !reflect.DeepEqual(p.Mismatches[0].Fields, []string{"value"}) {
			t.Errorf("mismatches: got %+v, want source 20 target 21 [value]", p.Mismatches)
		}
		if want := []map[string]int64{{"target_from": 31, "target_to": 31}}; !reflect.DeepEqual(p.ExtraRanges, want) {
			t.Errorf("extra_ranges: got %v, want %v", p.ExtraRanges, want)
		}
	})
	t.Run("table output", func(t *testing.T) {
		code, out, errs := run(t, append([]string{"diff", "--topic", faulty}, conn...)...)
		if code != 1 || !strings.Contains(out, faulty) {
			t.Errorf("exit %d, output %q, stderr %q; want exit 1 and a table naming the topic", code, out, errs)
		}
		t.Log("\n" + out)
	})
	t.Run("missing target topic exits 1 with a problem", func(t *testing.T) {
		code, out, _ := run(t, append([]string{"diff", "--topic", lonely, "--format", "json"}, conn...)...)
		r := decode(t, out)
		if code != 1 || len(r.Problems) != 1 {
			t.Errorf("exit %d problems %v, want exit 1 and one problem", code, r.Problems)
		}
	})
	t.Run("target topic flag", func(t *testing.T) {
		code, out, errs := run(t, append([]string{"diff", "--topic", same, "--target-topic", faulty, "--partitions", "0", "--format", "json"}, conn...)...)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr: %s", code, errs)
		}
		if r := decode(t, out); r.TargetTopic != faulty {
			t.Errorf("target_topic: got %q, want %q", r.TargetTopic, faulty)
		}
	})
	t.Run("target topic from the MM2 file's replication policy", func(t *testing.T) {
		// DefaultReplicationPolicy: the copy of <topic> from cluster "east" is "east.<topic>".
		prefixed := testkit.TopicName("orders")
		testkit.CreateTopic(t, src, prefixed, 1, nil)
		testkit.CreateTopic(t, dst, "east."+prefixed, 1, nil)
		testkit.Produce(t, src, prefixed, 0, recs(0, 19)...)
		testkit.Produce(t, dst, "east."+prefixed, 0, recs(0, 19)...)
		props := clitest.WriteFile(t, "mm2.properties", "clusters = east, west\neast.bootstrap.servers = "+srcSeeds+"\nwest.bootstrap.servers = "+dstSeeds+
			"\neast->west.enabled = true\nreplication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy\n")
		code, out, errs := run(t, "diff", "--mm2-config", props, "--topic", prefixed, "--format", "json")
		if code != 0 {
			t.Fatalf("exit %d, want 0; stderr: %s", code, errs)
		}
		if r := decode(t, out); r.TargetTopic != "east."+prefixed || r.Summary.Matched != 20 {
			t.Errorf("got target_topic %q and %d matched, want %q and 20", r.TargetTopic, r.Summary.Matched, "east."+prefixed)
		}
	})
	t.Run("from a time", func(t *testing.T) {
		from := time.UnixMilli(1_700_000_000_000 + 30).UTC().Format(time.RFC3339Nano)
		code, out, errs := run(t, append([]string{"diff", "--topic", same, "--partitions", "0", "--from", from, "--format", "json"}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d, want 0; stderr: %s", code, errs)
		}
		if r := decode(t, out); r.Summary.Matched != 20 {
			t.Errorf("got %d matched, want the 20 records from offset 30", r.Summary.Matched)
		}
	})
	usageCases := []struct {
		name string
		args []string
		want string
	}{
		{name: "bad compare", args: append([]string{"diff", "--topic", same, "--compare", "body"}, conn...), want: "--compare"},
		{name: "bad partitions", args: append([]string{"diff", "--topic", same, "--partitions", "3-1"}, conn...), want: "--partitions"},
		{name: "bad from", args: append([]string{"diff", "--topic", same, "--from", "yesterday"}, conn...), want: "--from"},
		{name: "unknown partition", args: append([]string{"diff", "--topic", same, "--partitions", "9"}, conn...), want: "partition 9"},
		{name: "unknown source topic", args: append([]string{"diff", "--topic", "nope"}, conn...), want: `"nope"`},
		{name: "no brokers", args: []string{"diff", "--topic", same}, want: "--source-brokers"},
		{name: "unreachable broker", args: []string{"diff", "--topic", same, "--source-brokers", "127.0.0.1:1", "--target-brokers", dstSeeds}, want: "127.0.0.1:1"},
	}
	for _, tt := range usageCases {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d stderr %q, want exit 2 naming %s", code, errs, tt.want)
			}
		})
	}
}

func TestParsePartitions(t *testing.T) {
	r := func(from, to int32) verify.PartitionRange { return verify.PartitionRange{From: from, To: to} }
	tests := []struct {
		name string
		in   string
		want []verify.PartitionRange
		err  string
	}{
		{name: "list and range", in: "0,3,5-9", want: []verify.PartitionRange{r(0, 0), r(3, 3), r(5, 9)}},
		{name: "duplicates and order", in: "3, 1,1-2", want: []verify.PartitionRange{r(1, 3)}},
		{name: "overlapping ranges", in: "5-9,0-6,12", want: []verify.PartitionRange{r(0, 9), r(12, 12)}},
		{name: "huge range, not expanded", in: "0-99999999", want: []verify.PartitionRange{r(0, 99999999)}},
		{name: "largest partition number", in: "2147483647", want: []verify.PartitionRange{r(2147483647, 2147483647)}},
		{name: "past int32", in: "2147483648", err: "go up to 2147483647"},
		{name: "far past int64", in: "1-99999999999999999999999", err: "go up to 2147483647"},
		{name: "reversed range", in: "9-5", err: "write 5-9"},
		{name: "negative", in: "-1", err: "not a partition number"},
		{name: "open range", in: "3-", err: "not a partition number"},
		{name: "empty", in: ",", err: "no partition"},
		{name: "blank", in: "", err: "no partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePartitions(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("parsePartitions(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parsePartitions(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestHelpTeaches(t *testing.T) {
	code, out, _ := run(t, "diff", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"missing", "duplicated", "mismatched", "extra", "ambiguous", "Exit status", "Examples", "nothing to compare", "--partitions"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := &progress{progressLine: progressLine{w: &b, start: time.Now().Add(-2 * time.Second)}, parts: map[int32]verify.Progress{}}
	p.update(verify.Progress{Partition: 3, SourceOffset: 120, SourceTo: 400, Records: 1000})
	p.update(verify.Progress{Partition: 1, SourceOffset: 50, SourceTo: 50, Records: 200, Done: true})
	p.print()
	got := b.String()
	for _, want := range []string{"1200 records", "/s)", "p3 120/400"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress line %q does not contain %q", got, want)
		}
	}
	if strings.Contains(got, "p1 ") {
		t.Errorf("progress line %q shows the finished partition 1", got)
	}
}
