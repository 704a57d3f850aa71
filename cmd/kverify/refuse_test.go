package main

// kverify diff's refusals: every case either gives the right answer or refuses (exit 2) with
// nothing written.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// notExist fails the test if path exists.
func notExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists (stat err %v): a refused run must write nothing", path, err)
	}
}

// TestDiffNothingToCompare: a range with no source records is never reported identical; a run
// that compares nothing at all exits 2 and writes nothing.
func TestDiffNothingToCompare(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}

	// Partition 0 holds records 0..49 (timestamps base+0..49), partition 1 records 50..59.
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 49)...)
	testkit.Produce(t, src, topic, 1, recs(50, 59)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 49)...)
	testkit.Produce(t, dst, topic, 1, recs(50, 59)...)
	empty := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, empty, 2, nil)
	testkit.CreateTopic(t, dst, empty, 2, nil)
	ts := func(i int) string { return time.UnixMilli(1_700_000_000_000 + int64(i)).UTC().Format(time.RFC3339Nano) }

	refused := []struct {
		name string
		args []string
		want []string
	}{
		{name: "from an offset past the end", args: []string{"--topic", topic, "--from", "60"}, want: []string{"nothing to compare", "partition 0", "partition 1", "--from"}},
		{name: "from a time after the last record", args: []string{"--topic", topic, "--from", ts(1000)}, want: []string{"nothing to compare", "partition 0", "--from"}},
		{name: "from a time after the last record of the one partition asked", args: []string{"--topic", topic, "--partitions", "1", "--from", ts(60)}, want: []string{"nothing to compare", "partition 1"}},
		{name: "from an offset past the end of the one partition asked", args: []string{"--topic", topic, "--partitions", "1", "--from", "10"}, want: []string{"nothing to compare", "partition 1", "end offset 10"}},
		{name: "to an offset at the start", args: []string{"--topic", topic, "--to", "0"}, want: []string{"nothing to compare"}},
		{name: "empty topics", args: []string{"--topic", empty}, want: []string{"nothing to compare", empty}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mapFile, outFile := filepath.Join(dir, "map.json"), filepath.Join(dir, "report.json")
			args := append(append([]string{"diff", "--format", "json", "--offset-map", mapFile, "--out", outFile}, tt.args...), conn...)
			code, out, errs := run(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stdout %q stderr %q", code, out, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not name %q", errs, w)
				}
			}
			if strings.Contains(out, `"identical": true`) {
				t.Errorf("stdout reports identical: %s", out)
			}
			notExist(t, mapFile)
			notExist(t, outFile)
		})
	}

	// From a time after the last record of partition 0 but not of partition 1: partition 1
	// is compared, partition 0 is named as not compared and is not in the offset map.
	t.Run("from a time past the end of some partitions only", func(t *testing.T) {
		mapFile := filepath.Join(t.TempDir(), "map.json")
		code, out, errs := run(t, append([]string{"diff", "--topic", topic, "--from", ts(55), "--format", "json", "--offset-map", mapFile}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d, want 0; stderr %s", code, errs)
		}
		var res struct {
			NotCompared []int32 `json:"not_compared"`
			Partitions  []struct {
				Matched     int64  `json:"matched"`
				NotCompared string `json:"not_compared"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Partitions) != 2 || res.Partitions[1].Matched != 5 || res.Partitions[1].NotCompared != "" {
			t.Fatalf("partitions %+v, want partition 1 compared with 5 matched", res.Partitions)
		}
		if p := res.Partitions[0]; p.NotCompared == "" || p.Matched != 0 {
			t.Errorf("partition 0: %+v, want not_compared set", p)
		}
		if len(res.NotCompared) != 1 || res.NotCompared[0] != 0 {
			t.Errorf("not_compared %v, want [0]", res.NotCompared)
		}
		om, err := offsetmap.ReadFile(mapFile)
		if err != nil {
			t.Fatal(err)
		}
		if om.Partition(0) != nil || om.Partition(1) == nil {
			t.Errorf("offset map has partitions %+v, want 1 only (0 was not compared: mapping it would be a guess)", om.Partitions)
		}
		code, out, _ = run(t, append([]string{"diff", "--topic", topic, "--from", ts(55)}, conn...)...)
		if code != 0 || !strings.Contains(out, "nothing to compare") {
			t.Errorf("table: exit %d, want 0 and partition 0 shown as nothing to compare:\n%s", code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "nothing to compare") && strings.Contains(line, "identical") {
				t.Errorf("line %q calls a partition not compared identical", line)
			}
		}
		t.Log("\n" + out)
	})
}

// TestDiffPartitionsFlag: --partitions is checked against the topic before anything is
// expanded, so a huge range is refused at once instead of hanging.
func TestDiffPartitionsFlag(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 9)...)
	testkit.Produce(t, src, topic, 1, recs(10, 19)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 9)...)
	testkit.Produce(t, dst, topic, 1, recs(10, 19)...)

	tests := []struct {
		name       string
		partitions string
		code       int
		want       string // in stderr (exit 2) or the matched count (exit 0)
		matched    int64
	}{
		{name: "huge range", partitions: "0-99999999", code: 2, want: "has no partitions 2-99999999"},
		{name: "largest partition number", partitions: "2147483647", code: 2, want: "no partition 2147483647"},
		{name: "past int32", partitions: "0-2147483648", code: 2, want: "2147483647"},
		{name: "one partition the topic lacks", partitions: "0,2", code: 2, want: "no partition 2"},
		{name: "reversed range", partitions: "1-0", code: 2, want: "reversed"},
		{name: "overlapping ranges", partitions: "0-1,1,0-0", code: 0, matched: 20},
		{name: "one partition", partitions: "1", code: 0, matched: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type outcome struct {
				code      int
				out, errs string
			}
			done := make(chan outcome, 1)
			go func() {
				code, out, errs := run(t, append([]string{"diff", "--topic", topic, "--partitions", tt.partitions, "--format", "json"}, conn...)...)
				done <- outcome{code, out, errs}
			}()
			var o outcome
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("--partitions %s: no answer after 20 s (hangs)", tt.partitions)
			}
			if o.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", o.code, tt.code, o.errs)
			}
			if tt.code == 2 {
				if !strings.Contains(o.errs, tt.want) || !strings.Contains(o.errs, topic) {
					t.Errorf("stderr %q, want it to name %q and the topic", o.errs, tt.want)
				}
				return
			}
			if r := decode(t, o.out); r.Summary.Matched != tt.matched {
				t.Errorf("matched %d, want %d", r.Summary.Matched, tt.matched)
			}
		})
	}
}

// TestDiffOutputsCheckedFirst: every output is checked before a cluster is read or a file
// written. The brokers are unreachable, so a check made after connecting would report them.
func TestDiffOutputsCheckedFirst(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	testkit.CreateTopic(t, src, "orders", 1, nil)
	testkit.CreateTopic(t, dst, "orders", 1, nil)
	testkit.Produce(t, src, "orders", 0, recs(0, 9)...)
	testkit.Produce(t, dst, "orders", 0, recs(0, 9)...)
	tests := []struct {
		name   string
		args   func(dir, existing, props string) []string
		want   string
		noRoot bool // root writes into a read-only directory: the case cannot happen
	}{
		{name: "out in a missing directory", want: "--out", args: func(d, e, p string) []string {
			return []string{"--offset-map", filepath.Join(d, "ok.json"), "--out", filepath.Join(d, "nope", "r.json")}
		}},
		{name: "offset map in a missing directory", want: "--offset-map", args: func(d, e, p string) []string {
			return []string{"--out", filepath.Join(d, "ok.json"), "--offset-map", filepath.Join(d, "nope", "m.json")}
		}},
		{name: "out under a file", want: "--out", args: func(d, e, p string) []string {
			return []string{"--offset-map", filepath.Join(d, "ok.json"), "--out", filepath.Join(e, "r.json")}
		}},
		{name: "out is a directory", want: "directory", args: func(d, e, p string) []string {
			return []string{"--offset-map", filepath.Join(d, "ok.json"), "--out", d}
		}},
		{name: "offset map is a directory", want: "directory", args: func(d, e, p string) []string {
			return []string{"--out", filepath.Join(d, "ok.json"), "--offset-map", d + "/"}
		}},
		{name: "same file twice", want: "same file", args: func(d, e, p string) []string {
			return []string{"--out", filepath.Join(d, "ok.json"), "--offset-map", filepath.Join(d, "ok.json")}
		}},
		{name: "same file twice by another name", want: "same file", args: func(d, e, p string) []string {
			return []string{"--out", filepath.Join(d, "ok.json"), "--offset-map", d + "/ro/../ok.json"}
		}},
		{name: "offset map over the MM2 file", want: "--mm2-config", args: func(d, e, p string) []string {
			return []string{"--mm2-config", p, "--offset-map", p}
		}},
		{name: "out over an existing input file", want: "--mm2-config", args: func(d, e, p string) []string {
			return []string{"--mm2-config", p, "--out", p, "--offset-map", filepath.Join(d, "ok.json")}
		}},
		{name: "bad format", want: "--format", args: func(d, e, p string) []string {
			return []string{"--offset-map", filepath.Join(d, "ok.json"), "--format", "yaml"}
		}},
		{name: "out in a read-only directory", want: "not writable", noRoot: true, args: func(d, e, p string) []string {
			return []string{"--offset-map", filepath.Join(d, "ok.json"), "--out", filepath.Join(d, "ro", "r.json")}
		}},
	}
	for _, tt := range tests {
		for _, side := range []struct {
			name, target string
		}{{"target unreachable", "127.0.0.1:1"}, {"target reachable", dstSeeds}} {
			t.Run(tt.name+"/"+side.name, func(t *testing.T) {
				if tt.noRoot && os.Geteuid() == 0 {
					t.Skip("running as root, which may write into a read-only directory")
				}
				dir := t.TempDir()
				props := filepath.Join(dir, "mm2.properties")
				text := "clusters = a, b\na.bootstrap.servers = " + srcSeeds + "\nb.bootstrap.servers = " + side.target + "\na->b.enabled = true\n"
				existing := filepath.Join(dir, "existing.json")
				for path, body := range map[string]string{props: text, existing: "keep me"} {
					if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Mkdir(filepath.Join(dir, "ro"), 0o500); err != nil {
					t.Fatal(err)
				}
				args := append([]string{"diff", "--topic", "orders"}, tt.args(dir, existing, props)...)
				if !slices.Contains(args, "--mm2-config") {
					args = append(args, "--source-brokers", srcSeeds, "--target-brokers", side.target)
				}
				code, out, errs := run(t, args...)
				if code != 2 || !strings.Contains(errs, tt.want) {
					t.Errorf("exit %d stderr %q, want exit 2 naming %q", code, errs, tt.want)
				}
				if strings.Contains(errs, "127.0.0.1:1") || strings.Contains(errs, "cannot reach") {
					t.Errorf("stderr %q: the cluster was contacted before the outputs were checked", errs)
				}
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				notExist(t, filepath.Join(dir, "ok.json"))
				if b, _ := os.ReadFile(existing); string(b) != "keep me" {
					t.Errorf("%s was overwritten: %q", existing, b)
				}
				if b, _ := os.ReadFile(props); string(b) != text {
					t.Errorf("%s was overwritten: %q", props, b)
				}
			})
		}
	}
}

// TestDiffOutputsWrittenTogether: with a good --out and --offset-map both are written, and
// an existing file is replaced only once the run has its answer.
func TestDiffOutputsWrittenTogether(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 9)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 9)...)
	dir := t.TempDir()
	mapFile, outFile := filepath.Join(dir, "map.json"), filepath.Join(dir, "r.json")
	if err := os.WriteFile(outFile, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "diff", "--topic", topic, "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--format", "json", "--out", outFile, "--offset-map", mapFile)
	if code != 0 || out != "" {
		t.Fatalf("exit %d stdout %q stderr %q, want 0 and the report in the file", code, out, errs)
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, string(b)); !r.Identical || r.Summary.Matched != 10 {
		t.Errorf("report %+v, want identical with 10 matched", r)
	}
	if _, err := offsetmap.ReadFile(mapFile); err != nil {
		t.Error(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want the two outputs only", names)
	}
}
