package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/verify"
)

// flowBed is a source and a target cluster holding a flow of several topics: two mirrored
// exactly, one damaged (records lost), one never mirrored, and internal and MM2 topics that
// --all must leave out.
type flowBed struct {
	conn                            []string
	good1, good2, damaged, unmirror string
}

func newFlowBed(t *testing.T) flowBed {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	b := flowBed{conn: []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds},
		good1: "alpha", good2: "bravo", damaged: "charlie", unmirror: "delta"}
	mirror := func(topic string, parts int32, n int, lose func(p int32, i int) bool) {
		testkit.CreateTopic(t, src, topic, parts, nil)
		testkit.CreateTopic(t, dst, topic, parts, nil)
		for p := int32(0); p < parts; p++ {
			all := recs(int(p)*1000, int(p)*1000+n-1)
			var kept []*kgo.Record
			for i, r := range all {
				if lose == nil || !lose(p, i) {
					kept = append(kept, r)
				}
			}
			testkit.Produce(t, src, topic, p, all...)
			testkit.Produce(t, dst, topic, p, kept...)
		}
	}
	mirror(b.good1, 3, 20, nil)
	mirror(b.good2, 1, 15, nil)
	mirror(b.damaged, 2, 30, func(p int32, i int) bool { return p == 1 && i >= 10 && i < 13 })
	testkit.CreateTopic(t, src, b.unmirror, 2, nil)
	testkit.Produce(t, src, b.unmirror, 0, recs(0, 4)...)
	testkit.Produce(t, src, b.unmirror, 1, recs(5, 9)...)
	// Never selected by --all: MM2's own topics, heartbeats, internal names.
	for _, topic := range []string{"mm2-offset-syncs.target.internal", "mm2-status.source", "heartbeats", "__consumer_offsets_x", "app-internal"} {
		testkit.CreateTopic(t, src, topic, 1, nil)
		testkit.Produce(t, src, topic, 0, recs(0, 1)...)
	}
	return b
}

type multiJSON struct {
	Kind      string `json:"kind"`
	Identical bool   `json:"identical"`
	Empty     bool   `json:"empty_shard"`
	Shard     *struct{ Index, Count int }
	Selection struct {
		Flow   string `json:"flow"`
		Topics []struct {
			Source     string `json:"source_topic"`
			Partitions int    `json:"partitions"`
		} `json:"topics"`
	} `json:"selection"`
	Total struct {
		Topics     int   `json:"topics"`
		Identical  int   `json:"identical_topics"`
		Differs    int   `json:"differing_topics"`
		Partitions int   `json:"partitions"`
		Matched    int64 `json:"matched"`
		Missing    int64 `json:"missing"`
	} `json:"total"`
	Topics []struct {
		Source     string   `json:"source_topic"`
		Target     string   `json:"target_topic"`
		Status     string   `json:"status"`
		Problems   []string `json:"problems"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Matched   int64 `json:"matched"`
			Missing   int64 `json:"missing"`
		} `json:"partitions"`
	} `json:"topics"`
}

func decodeMulti(t *testing.T, out string) multiJSON {
	t.Helper()
	var m multiJSON
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if m.Kind != verify.MultiKind {
		t.Fatalf("kind %q, want %q\n%s", m.Kind, verify.MultiKind, out)
	}
	return m
}

func (m multiJSON) statuses() map[string]string {
	s := map[string]string{}
	for _, t := range m.Topics {
		s[t.Source] = t.Status
	}
	return s
}

func TestDiffAll(t *testing.T) {
	b := newFlowBed(t)
	code, out, errs := run(t, append([]string{"diff", "--all", "--format", "json", "--parallel", "2"}, b.conn...)...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a topic differs)\nstderr: %s\n%s", code, errs, out)
	}
	m := decodeMulti(t, out)
	want := map[string]string{b.good1: "identical", b.good2: "identical", b.damaged: "differs", b.unmirror: "differs"}
	if got := m.statuses(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v (internal, heartbeats and mm2-* topics left out)", got, want)
	}
	if m.Identical || m.Total.Topics != 4 || m.Total.Identical != 2 || m.Total.Differs != 2 || m.Total.Partitions != 8 {
		t.Errorf("total %+v identical=%v, want 4 topics, 2 identical, 2 differ, 8 partitions", m.Total, m.Identical)
	}
	// 3 lost in charlie/1, and delta's 10 records are not on the target at all.
	if m.Total.Missing != 3+10 || m.Total.Matched != 60+15+57 {
		t.Errorf("missing %d matched %d, want %d and %d", m.Total.Missing, m.Total.Matched, 3+10, 60+15+57)
	}
	for _, tp := range m.Topics {
		if tp.Source == b.unmirror && (len(tp.Problems) == 0 || !strings.Contains(tp.Problems[0], "does not exist")) {
			t.Errorf("%s: problems %q, want the missing target topic named", tp.Source, tp.Problems)
		}
	}

	t.Run("table: a row per topic, then the partitions that differ, and a total line", func(t *testing.T) {
		code, out, _ := run(t, append([]string{"diff", "--all"}, b.conn...)...)
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		for _, s := range []string{"DIFFERS", b.good1, b.good2, "charlie partition 1: 3 differences", "missing      source 10-12", "delta partition 1: 5 differences", "total: 4 topics, 8 partitions", "target topic \"delta\" does not exist"} {
			if !strings.Contains(out, s) {
				t.Errorf("table lacks %q:\n%s", s, out)
			}
		}
		if strings.Contains(out, "alpha partition") {
			t.Errorf("table lists an identical partition:\n%s", out)
		}
	})
	t.Run("junit: one case per topic", func(t *testing.T) {
		code, out, _ := run(t, append([]string{"diff", "--all", "--format", "junit"}, b.conn...)...)
		var doc struct {
			Suites []struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Cases    []struct {
					Name    string    `xml:"name,attr"`
					Failure *struct{} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(out), &doc); err != nil || code != 1 || len(doc.Suites) != 1 {
			t.Fatalf("exit %d, err %v, suites %d:\n%s", code, err, len(doc.Suites), out)
		}
		s := doc.Suites[0]
		failed := map[string]bool{}
		for _, c := range s.Cases {
			failed[c.Name] = c.Failure != nil
		}
		want := map[string]bool{b.good1: false, b.good2: false, b.damaged: true, b.unmirror: true}
		if fmt.Sprint(failed) != fmt.Sprint(want) || s.Tests != 4 || s.Failures != 2 {
			t.Errorf("cases %v (tests %d, failures %d), want %v", failed, s.Tests, s.Failures, want)
		}
	})
	t.Run("markdown and html name every topic", func(t *testing.T) {
		for _, f := range []string{"markdown", "html"} {
			_, out, _ := run(t, append([]string{"diff", "--all", "--format", f}, b.conn...)...)
			for _, s := range []string{b.good1, b.damaged, "DIFFERS", "total: 4 topics"} {
				if !strings.Contains(out, s) {
					t.Errorf("%s lacks %q", f, s)
				}
			}
		}
	})
}

func TestDiffTopicsSelection(t *testing.T) {
	b := newFlowBed(t)
	cases := []struct {
		name  string
		args  []string
		code  int
		want  map[string]string
		wantE string
	}{
		{name: "regex, whole name", args: []string{"--topics", "alpha,brav."}, code: 0, want: map[string]string{"alpha": "identical", "bravo": "identical"}},
		{name: "a prefix does not match", args: []string{"--topics", "alph"}, code: 2, wantE: "matches none"},
		{name: "regex narrows --all", args: []string{"--all", "--topics", "charlie|alpha"}, code: 1, want: map[string]string{"alpha": "identical", "charlie": "differs"}},
		{name: "--topic twice", args: []string{"--topic", "bravo", "--topic", "charlie"}, code: 1, want: map[string]string{"bravo": "identical", "charlie": "differs"}},
		{name: "--topic names an unknown topic", args: []string{"--topic", "bravo", "--topic", "zulu"}, code: 2, wantE: `source topic "zulu" does not exist`},
		{name: "--topic with --all", args: []string{"--topic", "bravo", "--all"}, code: 2, wantE: "give one or the other"},
		{name: "bad regex", args: []string{"--topics", "a("}, code: 2, wantE: "invalid regex"},
		{name: "--partitions takes one topic", args: []string{"--all", "--partitions", "0"}, code: 2, wantE: "--partitions takes one topic"},
		{name: "--offset-map takes one topic", args: []string{"--all", "--offset-map", filepath.Join(t.TempDir(), "m.json")}, code: 2, wantE: "--offset-map takes one topic"},
		{name: "--evidence takes one topic", args: []string{"--all", "--evidence", filepath.Join(t.TempDir(), "e.json")}, code: 2, wantE: "--evidence takes one topic"},
		{name: "bad shard", args: []string{"--all", "--shard", "3/3"}, code: 2, wantE: "0 <= INDEX < COUNT"},
		{name: "no topic at all", args: nil, code: 2, wantE: "give --topic TOPIC"},
		{name: "nothing to compare in any topic", args: []string{"--topics", "alpha|bravo", "--from", "100000"}, code: 2, wantE: "nothing to compare"},
		{name: "from an offset in every topic", args: []string{"--topics", "alpha|bravo", "--from", "5"}, code: 0, want: map[string]string{"alpha": "identical", "bravo": "identical"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, append(append([]string{"diff", "--format", "json"}, tc.args...), b.conn...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s\n%s", code, tc.code, errs, out)
			}
			if tc.wantE != "" {
				if !strings.Contains(errs, tc.wantE) || out != "" {
					t.Errorf("stderr %q, want it to contain %q and nothing on stdout (%q)", errs, tc.wantE, out)
				}
				return
			}
			if got := decodeMulti(t, out).statuses(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("statuses %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("one --topic keeps the single-topic report", func(t *testing.T) {
		code, out, _ := run(t, append([]string{"diff", "--topic", "alpha", "--format", "json"}, b.conn...)...)
		r := decode(t, out)
		if code != 0 || r.SourceTopic != "alpha" || !r.Identical || strings.Contains(out, `"kind"`) {
			t.Errorf("exit %d, %+v: want the single-topic JSON, identical", code, r)
		}
	})
}

// shardRuns runs diff --all --shard i/n for every i and returns the report files.
func shardRuns(t *testing.T, b flowBed, n int, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for i := 0; i < n; i++ {
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		args := append([]string{"diff", "--all", "--shard", fmt.Sprintf("%d/%d", i, n), "--format", "json", "--out", f}, extra...)
		code, _, errs := run(t, append(args, b.conn...)...)
		if code != 0 && code != 1 {
			t.Fatalf("shard %d/%d: exit %d: %s", i, n, code, errs)
		}
		files = append(files, f)
	}
	return files
}

func readMulti(t *testing.T, path string) multiJSON {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeMulti(t, string(data))
}

func TestShardsAndMerge(t *testing.T) {
	b := newFlowBed(t)
	_, whole, _ := run(t, append([]string{"diff", "--all", "--format", "json"}, b.conn...)...)
	wm := decodeMulti(t, whole)
	files := shardRuns(t, b, 3)

	t.Run("every partition in exactly one shard", func(t *testing.T) {
		seen := map[string]int{}
		for _, f := range files {
			m := readMulti(t, f)
			for _, tp := range m.Topics {
				for _, p := range tp.Partitions {
					seen[fmt.Sprintf("%s/%d", tp.Source, p.Partition)]++
				}
			}
		}
		if len(seen) != wm.Total.Partitions {
			t.Errorf("shards cover %d partitions, the whole run %d", len(seen), wm.Total.Partitions)
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s in %d shards", k, n)
			}
		}
	})
	t.Run("merge gives the verdict of the whole run", func(t *testing.T) {
		code, out, errs := run(t, append([]string{"merge", "--format", "json"}, files...)...)
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, errs)
		}
		m := decodeMulti(t, out)
		if fmt.Sprint(m.statuses()) != fmt.Sprint(wm.statuses()) || m.Total != wm.Total {
			t.Errorf("merged %v %+v, whole run %v %+v", m.statuses(), m.Total, wm.statuses(), wm.Total)
		}
	})
	t.Run("merge refuses", func(t *testing.T) {
		dir := t.TempDir()
		write := func(name, text string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		raw, _ := os.ReadFile(files[1])
		var m map[string]any
		json.Unmarshal(raw, &m)
		overlap := m["topics"].([]any)
		other, _ := os.ReadFile(files[0])
		var m0 map[string]any
		json.Unmarshal(other, &m0)
		m["topics"] = append(overlap, m0["topics"].([]any)[0])
		overlapped, _ := json.Marshal(m)
		_, single, _ := run(t, append([]string{"diff", "--topic", "alpha", "--format", "json"}, b.conn...)...)
		other4 := shardRuns(t, b, 4)
		regex := shardRuns(t, b, 3, "--topics", "alpha|bravo|charlie|delta")
		cases := []struct {
			name  string
			files []string
			want  string
		}{
			{"a shard missing", files[:2], "shard 2/3 missing"},
			{"a shard twice", []string{files[0], files[1], files[1], files[2]}, "are both shard 1/3"},
			{"different shard counts", []string{files[0], files[1], other4[2]}, "different shard counts"},
			{"different selections", []string{files[0], files[1], regex[2]}, "different runs"},
			{"not JSON", []string{files[0], files[1], write("junk.json", "hello")}, "junk.json: not a JSON report"},
			{"another report", []string{files[0], files[1], write("other.json", `{"groups": []}`)}, "other.json: not a JSON report of kverify diff over several topics"},
			{"a single-topic report", []string{files[0], files[2], write("single.json", single)}, "single.json: a single-topic report"},
			{"overlapping partitions", []string{files[0], write("overlap.json", string(overlapped)), files[2]}, "the reports overlap"},
			{"unreadable", []string{files[0], files[1], filepath.Join(dir, "nope.json")}, "nope.json"},
		}
		for _, tc := range cases {
			out := filepath.Join(t.TempDir(), "merged.json")
			code, stdout, errs := run(t, append([]string{"merge", "--out", out}, tc.files...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || stdout != "" {
				t.Errorf("%s: exit %d, stderr %q; want exit 2 naming %q", tc.name, code, errs, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s: --out was written", tc.name)
			}
		}
	})
}

func TestEmptyShard(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	testkit.CreateTopic(t, src, "solo", 1, nil)
	testkit.CreateTopic(t, dst, "solo", 1, nil)
	testkit.Produce(t, src, "solo", 0, recs(0, 9)...)
	testkit.Produce(t, dst, "solo", 0, recs(0, 9)...)
	owner := verify.ShardOf("solo", 0, 2)
	empty := 1 - owner
	code, out, errs := run(t, "diff", "--all", "--shard", fmt.Sprintf("%d/2", empty), "--format", "json", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
	m := decodeMulti(t, out)
	if code != 0 || !m.Empty || m.Identical || len(m.Topics) != 0 || len(m.Selection.Topics) != 1 || !strings.Contains(errs, "nothing compared") {
		t.Errorf("exit %d, %+v, stderr %q: want exit 0, an empty shard that is not identical, the selection recorded", code, m, errs)
	}
	dir := t.TempDir()
	var files []string
	for i := 0; i < 2; i++ {
		f := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		run(t, "diff", "--all", "--shard", fmt.Sprintf("%d/2", i), "--format", "json", "--out", f, "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
		files = append(files, f)
	}
	code, out, errs = run(t, append([]string{"merge", "--format", "json"}, files...)...)
	if m := decodeMulti(t, out); code != 0 || !m.Identical || m.Total.Partitions != 1 {
		t.Errorf("merge: exit %d, %+v, stderr %q; want identical over 1 partition", code, m, errs)
	}
}

// TestDiffAllMM2File: with an MM2 file, --all takes the flow's topics filters and names each
// target topic by the flow's replication policy.
func TestDiffAllMM2File(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	for _, topic := range []string{"orders", "payments", "scratch"} {
		testkit.CreateTopic(t, src, topic, 2, nil)
		testkit.CreateTopic(t, dst, "east."+topic, 2, nil)
		for p := int32(0); p < 2; p++ {
			testkit.Produce(t, src, topic, p, recs(0, 9)...)
			testkit.Produce(t, dst, "east."+topic, p, recs(0, 9)...)
		}
	}
	// The target's own topics and MM2's are no topics of the flow's source.
	testkit.CreateTopic(t, dst, "east.checkpoints.internal", 1, nil)
	props := clitest.WriteFile(t, "mm2.properties", "clusters = east, west\neast.bootstrap.servers = "+srcSeeds+"\nwest.bootstrap.servers = "+dstSeeds+
		"\neast->west.enabled = true\neast->west.topics = orders, pay.*, scratch\neast->west.topics.exclude = scratch\n"+
		"replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy\n")
	code, out, errs := run(t, "diff", "--mm2-config", props, "--all", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s\n%s", code, errs, out)
	}
	m := decodeMulti(t, out)
	targets := map[string]string{}
	for _, tp := range m.Topics {
		targets[tp.Source] = tp.Target
	}
	if want := map[string]string{"orders": "east.orders", "payments": "east.payments"}; fmt.Sprint(targets) != fmt.Sprint(want) || !m.Identical || m.Selection.Flow != "east->west" {
		t.Errorf("topics %v (flow %s, identical %v), want %v: topics.exclude leaves out scratch", targets, m.Selection.Flow, m.Identical, want)
	}
}

// TestShardWithNothingToCompare: a shard whose only partition is empty writes its report and
// exits 0 (the merge decides), and the merge names that topic as not compared, the other
// identical.
func TestShardWithNothingToCompare(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	for _, cl := range []*kgo.Client{src, dst} {
		testkit.CreateTopic(t, cl, "solo", 1, nil)
		testkit.CreateTopic(t, cl, "hollow", 1, nil)
		testkit.Produce(t, cl, "solo", 0, recs(0, 9)...)
	}
	count := 2
	for verify.ShardOf("solo", 0, count) == verify.ShardOf("hollow", 0, count) {
		count++
	}
	dir := t.TempDir()
	var files []string
	for i := 0; i < count; i++ {
		f := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		code, _, errs := run(t, "diff", "--all", "--shard", fmt.Sprintf("%d/%d", i, count), "--format", "json", "--out", f, "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
		if code != 0 {
			t.Fatalf("shard %d/%d: exit %d, want 0: %s", i, count, code, errs)
		}
		if i == verify.ShardOf("hollow", 0, count) && !strings.Contains(errs, "nothing compared") {
			t.Errorf("shard %d/%d with only the empty partition: stderr %q, want it to say nothing was compared", i, count, errs)
		}
		files = append(files, f)
	}
	code, out, errs := run(t, append([]string{"merge", "--format", "json"}, files...)...)
	m := decodeMulti(t, out)
	if code != 0 || !m.Identical || fmt.Sprint(m.statuses()) != fmt.Sprint(map[string]string{"hollow": "nothing to compare", "solo": "identical"}) {
		t.Errorf("merge: exit %d, statuses %v, identical %v, stderr %q", code, m.statuses(), m.Identical, errs)
	}
}
