package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/verify"
)

// TestVerifyState runs kverify diff --state and --follow on real brokers:
// Kafka 2.3.0 -> MirrorMaker 2 3.7.1 -> Kafka 3.7.1 (identity policy), two partitions.
//
//   - a first run verifies everything (300 records per partition) and writes the state;
//   - 200 more records per partition are produced and mirrored: the rerun reads only them
//     (source_start 300, 200 matched per partition) and is identical;
//   - --follow runs while 300 more per partition are produced and mirrored; its metrics,
//     scraped over HTTP, reach lag 0 with the verified offsets at the source end; SIGINT
//     stops it with exit 0;
//   - MM2 is stopped, the target topic deleted, recreated and refilled with the very same
//     records: the rerun finds the recreation (the 3.7.1 target has topic IDs) and exits 1.
//
// $KMIGRATE_PAIR (pair_test.go) picks other versions; every target of a pair has topic IDs.
func TestVerifyState(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: "vs-source"})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: "vs-destination"})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic := "vs-orders-" + run
	bedCreateTopic(t, src, topic, 2, nil)
	base := time.Now().Add(-time.Hour)
	produced := 0
	produceMore := func(n int) {
		for p := int32(0); p < 2; p++ {
			bedProduce(ctx, t, src, topic, p, vfRecords(fmt.Sprintf("p%d", p), produced, produced+n, base))
		}
		produced += n
	}
	mirroredAll := func() {
		bedWaitFor(ctx, t, time.Second, fmt.Sprintf("%d records per partition on the target", produced), func() string {
			ends := bedEndOffsets(ctx, t, dst, topic)
			if ends[0] != int64(produced) || ends[1] != int64(produced) {
				return fmt.Sprintf("target end offsets %v", ends)
			}
			return ""
		})
	}
	produceMore(300)

	props := vfProperties(src, dst, "vs-.*-"+run)
	propsFile := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	mm := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "destination"})
	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	vfWaitIdentical(ctx, t, srcCl, dstCl, topic, mm.LogPath())
	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	state := filepath.Join(t.TempDir(), "orders.state.json")
	args := []string{"diff", "--mm2-config", propsFile, "--topic", topic, "--state", state, "--format", "json"}

	check := func(what string, code int, out, errs string, from, matched, to int64) *verify.Result {
		t.Helper()
		if code != 0 {
			t.Fatalf("%s: exit %d, want 0\nstderr: %s\nstdout: %s", what, code, errs, out)
		}
		res := vfDecode(t, out)
		if !res.Identical || len(res.Partitions) != 2 {
			t.Fatalf("%s: identical=%v, %d partitions, want identical: %s", what, res.Identical, len(res.Partitions), out)
		}
		for _, p := range res.Partitions {
			if p.SourceStart != from || p.Matched != matched || p.SourceEnd != to || p.Counts.Differs() {
				t.Errorf("%s: partition %d from %d to %d with %+v, want %d matched from %d to %d", what, p.Partition, p.SourceStart, p.SourceEnd, p.Counts, matched, from, to)
			}
		}
		return res
	}

	code, out, errs := bedOutput(t, bin, args...)
	bedReport(t, "verify-state-first", check("first run", code, out, errs, 0, 300, 300))

	produceMore(200)
	mirroredAll()
	code, out, errs = bedOutput(t, bin, args...)
	bedReport(t, "verify-state-resumed", check("rerun after 200 more", code, out, errs, 300, 200, 500))

	t.Run("follow reaches lag 0", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append(args, "--follow", "--interval", "1s", "--metrics-addr", addr)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer cmd.Process.Kill()
		for i := 0; i < 3; i++ {
			produceMore(100) // while the mirror and kverify run
		}
		var last string
		bedWaitFor(ctx, t, 500*time.Millisecond, "kverify metrics at lag 0 with every partition verified to the end", func() string {
			m, body, err := vsScrape(addr)
			if err != nil {
				return err.Error()
			}
			last = body
			for p := 0; p < 2; p++ {
				if got := m[fmt.Sprintf(`kverify_verified_offset{partition="%d",topic=%q}`, p, topic)]; got != int64(produced) {
					return fmt.Sprintf("partition %d verified to %d of %d", p, got, produced)
				}
			}
			if m["kverify_lag_records"] != 0 || m["kverify_problems_total"] != 0 {
				return fmt.Sprintf("lag %d, problems %d", m["kverify_lag_records"], m["kverify_problems_total"])
			}
			return ""
		})
		t.Logf("metrics at lag 0:\n%s", last)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("kverify --follow after SIGINT: %v, want exit 0\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("kverify --follow did not stop within 2 minutes of SIGINT\nstderr: %s", stderr.String())
		}
		res := vfDecode(t, stdout.String())
		bedReport(t, "verify-state-follow", res)
		if !res.Identical {
			t.Errorf("follow verdict not identical: %s", stdout.String())
		}
		rounds := strings.Count(stderr.String(), "kverify: round ")
		t.Logf("%d rounds; stderr tail: %s", rounds, vsTail(stderr.String(), 3))
	})

	t.Run("a recreated target is a finding", func(t *testing.T) {
		if err := mm.Stop(ctx); err != nil {
			t.Fatalf("stop MM2: %v", err)
		}
		adm := bedAdmin(t, dst)
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Fatalf("delete target topic: %v", err)
		}
		bedWaitFor(ctx, t, 500*time.Millisecond, "the target topic recreated", func() string {
			resp, err := adm.CreateTopic(ctx, 2, 1, nil, topic)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				return err.Error()
			}
			return ""
		})
		for p := int32(0); p < 2; p++ {
			bedProduce(ctx, t, dst, topic, p, bedReadPartition(ctx, t, src, topic, p, 0))
		}
		mirroredAll()
		code, out, errs := bedOutput(t, bin, args...)
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstderr: %s\nstdout: %s", code, errs, out)
		}
		res := vfDecode(t, out)
		bedReport(t, "verify-state-recreated", res)
		if res.Identical || !strings.Contains(strings.Join(res.Problems, "\n"), fmt.Sprintf("target topic %q partition 0: the topic was recreated", topic)) {
			t.Errorf("problems %q, want the recreated target topic named", res.Problems)
		}
	})
}

var vsMetricRE = regexp.MustCompile(`(?m)^(kverify_[a-z_]+)(\{[^}]*\})? (\d+)$`)

// vsScrape reads kverify's metrics, keyed by name and labels.
func vsScrape(addr string) (map[string]int64, string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	m := map[string]int64{}
	for _, s := range vsMetricRE.FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.ParseInt(s[3], 10, 64)
		m[s[1]+s[2]] = v
	}
	return m, string(b), nil
}

func vsTail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
