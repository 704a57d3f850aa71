package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

func cluster(t *testing.T) (*kgo.Client, string) {
	c := testkit.NewCluster(t)
	return c.Client, c.Seeds
}

// start runs one of the built binaries until the test ends (SIGTERM, then kill after 40s);
// a failed test logs its output.
func start(t *testing.T, name string, args ...string) *testkit.SyncBuffer {
	t.Helper()
	var out testkit.SyncBuffer
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return &out
}

var servingRE = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// seedTopic creates topic with 2 partitions on both clusters, the target's with
// max.message.bytes 2000, and produces 100 records and then one of 5000 bytes to partition 1.
func seedTopic(t *testing.T, src, dst *kgo.Client, topic string) {
	t.Helper()
	ctx := context.Background()
	limit := "2000"
	if _, err := kadm.NewClient(src).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(dst).CreateTopic(ctx, 2, 1, map[string]*string{"max.message.bytes": &limit}, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)})
	}
	recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: bytes.Repeat([]byte("x"), 5000)})
	if err := src.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// runKmirror mirrors topic (2 partitions, the second with a record over the target topic's
// max.message.bytes, so that a partition is stopped) and returns kmirror's HTTP address once
// it is ready, every record before the big one is mirrored and the partition is stopped.
func runKmirror(t *testing.T, src *kgo.Client, srcSeeds, dstSeeds string, dst *kgo.Client, topic string) string {
	t.Helper()
	seedTopic(t, src, dst, topic)
	props := filepath.Join(t.TempDir(), "mm2.properties")
	writeFile(t, props, fmt.Sprintf(`clusters=A,B
A.bootstrap.servers=%s
B.bootstrap.servers=%s
A->B.enabled=true
A->B.topics=%s
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
emit.checkpoints.enabled=false
`, srcSeeds, dstSeeds, topic))
	out := start(t, "kmirror", "run", "--config", props, "--flow", "A->B", "--metrics-addr", "127.0.0.1:0")
	var addr string
	testkit.WaitFor(t, "kmirror serving metrics", time.Minute, func() string {
		if m := servingRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
			return ""
		}
		return "no address logged yet"
	})
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d, want 200", resp.StatusCode)
	}
	testkit.WaitFor(t, "kmirror ready, 100 records mirrored, a partition stopped", time.Minute, func() string {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		_, v, err := exported(addr)
		if err != nil {
			return err.Error()
		}
		if resp.StatusCode != http.StatusOK || v["kmirror_records_total"] != 100 || v["kmirror_stopped_partitions"] != 1 {
			return fmt.Sprintf("/readyz %d, records %g, stopped %g", resp.StatusCode, v["kmirror_records_total"], v["kmirror_stopped_partitions"])
		}
		return ""
	})
	return addr
}

// runKverifyFollow runs kverify diff --follow on topic and returns its metrics address once the
// first round is done.
func runKverifyFollow(t *testing.T, srcSeeds, dstSeeds, topic string) string {
	t.Helper()
	addr := testkit.FreeAddr(t)
	state := filepath.Join(t.TempDir(), "state.json")
	start(t, "kverify", "diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--topic", topic,
		"--state", state, "--follow", "--interval", "200ms", "--metrics-addr", addr)
	testkit.WaitFor(t, "kverify's first round", time.Minute, func() string {
		names, _, err := exported(addr)
		if err != nil {
			return err.Error()
		}
		if !names["kverify_lag_records"] {
			return "no kverify_lag_records yet"
		}
		return ""
	})
	return addr
}

// TestDashboards checks that every metric the dashboards query is exported: kmirror.json by
// kmirror run, kverify-follow.json by kverify diff --follow (see doc.go).
func TestDashboards(t *testing.T) {
	src, srcSeeds := cluster(t)
	dst, dstSeeds := cluster(t)
	const topic = "dashboard"
	kmirror := runKmirror(t, src, srcSeeds, dstSeeds, dst, topic)

	verifyAddr := runKverifyFollow(t, srcSeeds, dstSeeds, topic)

	for _, tc := range []struct{ file, addr string }{
		{"grafana/kmirror.json", kmirror},
		{"grafana/kverify-follow.json", verifyAddr},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			names, _, err := exported(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			miss, queried := missing(t, readDashboard(t, tc.file), names)
			if len(miss) > 0 {
				t.Errorf("the dashboard queries metrics the binary does not export:\n  %s", strings.Join(miss, "\n  "))
			}
			t.Logf("%d metrics queried, all exported", len(queried))
		})
	}

	t.Run("the kmirror dashboard shows throughput, lag, latency, ages and errors", func(t *testing.T) {
		_, queried := missing(t, readDashboard(t, "grafana/kmirror.json"), nil)
		for _, want := range []string{"kmirror_records_total", "kmirror_bytes_total", "kmirror_replication_lag_records",
			"kmirror_replication_latency_seconds_bucket", "kmirror_offset_map_persist_age_seconds", "kmirror_checkpoint_age_seconds",
			"kmirror_fetch_errors_total", "kmirror_produce_errors_total", "kmirror_stopped_partitions"} {
			if !queried[want] {
				t.Errorf("kmirror.json does not query %s", want)
			}
		}
	})

	t.Run("a metric not exported is caught", func(t *testing.T) { checkCatches(t, kmirror) })
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkCatches checks the check itself: a dashboard that queries metrics kmirror (at addr) does
// not export, in a panel and in a variable, must have both reported.
func checkCatches(t *testing.T, addr string) {
	t.Helper()
	names, _, err := exported(addr)
	if err != nil {
		t.Fatal(err)
	}
	d := readDashboard(t, "grafana/kmirror.json")
	d.Panels = append(d.Panels, panel{Title: "bogus", Type: "timeseries"})
	d.Panels[len(d.Panels)-1].Targets = append(d.Panels[len(d.Panels)-1].Targets, struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}{"A", `sum(rate(kmirror_records_total[$__rate_interval])) / sum(rate(kmirror_no_such_metric_total{job=~"$job"}[$__rate_interval]))`})
	d.Templating.List[1].Definition = "label_values(kmirror_no_such_gauge, job)"
	miss, _ := missing(t, d, names)
	sort.Strings(miss)
	want := []string{`kmirror_no_such_gauge (variable "job")`, `kmirror_no_such_metric_total (panel "bogus" query A)`}
	if strings.Join(miss, "|") != strings.Join(want, "|") {
		t.Errorf("got missing %q, want %q", miss, want)
	}
}
