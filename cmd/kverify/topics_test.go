package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// The JSON fields of kverify topics' result, exactly so.
type topicsJSON struct {
	Topics []struct {
		SourceTopic string `json:"source_topic"`
		TargetTopic string `json:"target_topic"`
		Status      string `json:"status"`
		Findings    []struct {
			Field    string `json:"field"`
			Source   string `json:"source"`
			Target   string `json:"target"`
			Severity string `json:"severity"`
			Note     string `json:"note"`
		} `json:"findings"`
	} `json:"topics"`
	ClusterFindings []json.RawMessage `json:"cluster_findings"`
	OK              bool              `json:"ok"`
}

func TestTopicsCommand(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	ok, ts, gone := testkit.TopicName("orders"), testkit.TopicName("orders"), testkit.TopicName("orders")
	testkit.CreateTopic(t, src, ok, 2, nil)
	testkit.CreateTopic(t, dst, ok, 2, nil)
	testkit.CreateTopic(t, src, ts, 1, nil)
	testkit.CreateTopic(t, dst, ts, 1, map[string]*string{"message.timestamp.type": sp("LogAppendTime")})
	testkit.CreateTopic(t, src, gone, 1, nil)

	t.Run("all ok exits 0", func(t *testing.T) {
		code, out, stderr := run(t, append([]string{"topics", "--topics", ok}, conn...)...)
		if code != 0 || !strings.Contains(out, "ALL OK: no findings") {
			t.Fatalf("got exit %d, want 0\n%s\n%s", code, out, stderr)
		}
	})
	t.Run("findings exit 1 with the JSON fields", func(t *testing.T) {
		code, out, stderr := run(t, append([]string{"topics", "--format", "json"}, conn...)...)
		if code != 1 {
			t.Fatalf("got exit %d, want 1\n%s\n%s", code, out, stderr)
		}
		var r topicsJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, tp := range r.Topics {
			got[tp.SourceTopic] = tp.Status
			for _, f := range tp.Findings {
				if f.Field == "" || f.Severity == "" || f.Note == "" {
					t.Errorf("%s: finding with an empty field: %+v", tp.SourceTopic, f)
				}
			}
		}
		want := map[string]string{ok: "ok", ts: "risk", gone: "missing"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("topic %s: got status %q, want %q (all %v)", k, got[k], v, got)
			}
		}
		if r.OK || r.ClusterFindings == nil {
			t.Errorf("got ok=%v, cluster_findings %v; want false and a list", r.OK, r.ClusterFindings)
		}
	})
	t.Run("junit to a file, one case per topic", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "preflight.xml")
		code, _, stderr := run(t, append([]string{"topics", "--topics", ts + "," + gone, "--format", "junit", "--out", path}, conn...)...)
		b, err := os.ReadFile(path)
		if code != 1 || err != nil {
			t.Fatalf("got exit %d (%v)\n%s", code, err, stderr)
		}
		if n := strings.Count(string(b), "<testcase "); n != 3 {
			t.Errorf("got %d cases, want 3 (2 topics + clusters)\n%s", n, b)
		}
	})
	t.Run("nothing selected exits 2", func(t *testing.T) {
		code, out, stderr := run(t, append([]string{"topics", "--topics", "no-such-.*"}, conn...)...)
		if code != 2 || !strings.Contains(stderr, "no source topic selected") || out != "" {
			t.Errorf("got exit %d, stdout %q, stderr %q; want 2 naming the empty selection", code, out, stderr)
		}
	})
	t.Run("bad regex exits 2", func(t *testing.T) {
		code, _, stderr := run(t, append([]string{"topics", "--topics", "a(b"}, conn...)...)
		if code != 2 || !strings.Contains(stderr, "--topics") {
			t.Errorf("got exit %d, stderr %q; want 2 naming --topics", code, stderr)
		}
	})
	t.Run("unreachable cluster exits 2, nothing written", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "out.json")
		code, _, stderr := run(t, "topics", "--source-brokers", "127.0.0.1:1", "--target-brokers", dstSeeds, "--format", "json", "--out", path)
		if _, err := os.Stat(path); code != 2 || err == nil {
			t.Errorf("got exit %d (file written: %v), stderr %q; want 2 and no file", code, err == nil, stderr)
		}
	})
}

func sp(s string) *string { return &s }
