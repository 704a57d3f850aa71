package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/verify"
)

// TestMain lets the kill -9 test run this binary as kverify itself (KVERIFY_AS_MAIN=1).
func TestMain(m *testing.M) {
	if os.Getenv("KVERIFY_AS_MAIN") == "1" {
		os.Exit(clikit.Main(app(), append([]string{"kverify"}, os.Args[1:]...)))
	}
	os.Exit(m.Run())
}

type stateJSON struct {
	Identical  bool     `json:"identical"`
	Problems   []string `json:"problems"`
	Partitions []struct {
		Partition   int32 `json:"partition"`
		Matched     int64 `json:"matched"`
		Missing     int64 `json:"missing"`
		SourceStart int64 `json:"source_start"`
		SourceEnd   int64 `json:"source_end"`
	} `json:"partitions"`
}

func decodeState(t *testing.T, out string) stateJSON {
	t.Helper()
	var r stateJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return r
}

func readState(t *testing.T, path string) *verify.State {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := verify.ParseState(b)
	if err != nil {
		t.Fatalf("state file %s: %v\n%s", path, err, b)
	}
	return st
}

func TestDiffStateResumes(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, recs(0, 99)...)
		testkit.Produce(t, dst, topic, p, recs(0, 99)...)
	}
	state := filepath.Join(t.TempDir(), "orders.state.json")
	args := []string{"diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--topic", topic, "--state", state, "--format", "json"}
	code, out, errs := run(t, args...)
	if code != 0 {
		t.Fatalf("first run: exit %d, want 0\n%s%s", code, errs, out)
	}
	if st := readState(t, state); st.Partition(0).SourceEnd != 100 || st.Partition(1).SourceEnd != 100 {
		t.Fatalf("state after the first run: %+v", st.Partitions)
	}
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, recs(100, 129)...)
		testkit.Produce(t, dst, topic, p, recs(100, 129)...)
	}
	mapFile := filepath.Join(t.TempDir(), "map.json")
	code, out, errs = run(t, append(args, "--offset-map", mapFile)...)
	if code != 0 {
		t.Fatalf("second run: exit %d, want 0\n%s%s", code, errs, out)
	}
	for _, p := range decodeState(t, out).Partitions {
		if p.SourceStart != 100 || p.Matched != 30 || p.SourceEnd != 130 {
			t.Errorf("partition %d: resumed at %d with %d matched to %d, want 30 matched from 100 to 130", p.Partition, p.SourceStart, p.Matched, p.SourceEnd)
		}
	}
	if st := readState(t, state); st.Partition(0).SourceEnd != 130 || st.Partition(0).Verified.Matched != 130 {
		t.Errorf("state after the second run: %+v", st.Partition(0))
	}

	t.Run("the target recreated is a finding", func(t *testing.T) {
		ctx := clitest.Context(t)
		adm := kadm.NewClient(dst)
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Fatal(err)
		}
		for {
			if resp, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err == nil && resp.Err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("cannot recreate the target topic")
			}
			time.Sleep(50 * time.Millisecond)
		}
		code, out, errs := run(t, args...)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", code, errs, out)
		}
		r := decodeState(t, out)
		if r.Identical || !strings.Contains(strings.Join(r.Problems, "\n"), "the topic was recreated") {
			t.Errorf("problems %q, want the recreated target named", r.Problems)
		}
		if st := readState(t, state); st.Partition(0).SourceEnd != 130 || st.Partition(1).SourceEnd != 130 {
			t.Errorf("the state moved past a broken boundary: %+v", st.Partitions)
		}
	})

	t.Run("a state for another topic is refused", func(t *testing.T) {
		other := testkit.TopicName("orders")
		testkit.CreateTopic(t, src, other, 2, nil)
		testkit.CreateTopic(t, dst, other, 2, nil)
		code, out, errs := run(t, "diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--topic", other, "--state", state)
		if code != 2 || !strings.Contains(errs, "belongs to another comparison") || !strings.Contains(errs, topic) {
			t.Errorf("exit %d, stderr %q, want 2 naming the state's topic\n%s", code, errs, out)
		}
	})

	t.Run("flags", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--follow"}, "--follow needs --state"},
			{[]string{"--state", state, "--from", "5"}, "give no --from or --to"},
			{[]string{"--state", state, "--follow", "--offset-map", mapFile}, "--offset-map with --follow"},
			{[]string{"--state", state, "--metrics-addr", "127.0.0.1:0"}, "are for --follow"},
		} {
			code, _, errs := run(t, append([]string{"diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--topic", topic}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("%v: exit %d, stderr %q, want 2 with %q", tc.args, code, errs, tc.want)
			}
		}
	})
}

var metricRE = regexp.MustCompile(`(?m)^(kverify_[a-z_]+)(\{[^}]*\})? (\d+)$`)

// scrape returns the metrics served at addr, keyed by name and labels.
func scrape(addr string) (map[string]int64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, m := range metricRE.FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.ParseInt(m[3], 10, 64)
		out[m[1]+m[2]] = v
	}
	return out, nil
}

func TestDiffFollowMetrics(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 99)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 59)...) // the mirror is 40 behind
	state := filepath.Join(t.TempDir(), "s.json")
	addr := testkit.FreeAddr(t)
	done := make(chan struct{})
	var code int
	var out, errs string
	go func() {
		defer close(done)
		code, out, errs = clitest.RunContext(t, context.Background(), app(), "kverify", "diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds,
			"--topic", topic, "--state", state, "--follow", "--interval", "50ms", "--metrics-addr", addr, "--format", "json")
	}()
	// The exposition sorts labels by name (Prometheus does not order them).
	verified := fmt.Sprintf(`kverify_verified_offset{partition="0",topic=%q}`, topic)
	want := func(off, lag int64) func() string {
		return func() string {
			m, err := scrape(addr)
			if err != nil {
				return err.Error()
			}
			if m[verified] != off || m["kverify_lag_records"] != lag || m["kverify_problems_total"] != 0 {
				return fmt.Sprintf("%v", m)
			}
			if _, ok := m["kverify_lag_records"]; !ok {
				return "no lag yet"
			}
			return ""
		}
	}
	testkit.WaitFor(t, "verified 60, lag 40", 30*time.Second, want(60, 40))
	testkit.Produce(t, dst, topic, 0, recs(60, 99)...) // the mirror catches up
	testkit.WaitFor(t, "verified 100, lag 0", 30*time.Second, want(100, 0))
	testkit.Produce(t, src, topic, 0, recs(100, 119)...)
	testkit.Produce(t, dst, topic, 0, recs(100, 119)...)
	testkit.WaitFor(t, "verified 120, lag 0", 30*time.Second, want(120, 0))
	if !clitest.SignalUntil(t, syscall.SIGTERM, done) {
		t.Fatal("kverify --follow did not stop on SIGTERM")
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0 (identical so far)\n%s%s", code, errs, out)
	}
	if r := decodeState(t, out); !r.Identical {
		t.Errorf("final report not identical: %s", out)
	}
	if st := readState(t, state); st.Partition(0).SourceEnd != 120 || st.Partition(0).Verified.Matched != 120 || st.Lag() != 0 {
		t.Errorf("state at exit: %+v", st.Partition(0))
	}
	if !strings.Contains(errs, "round 1:") {
		t.Errorf("no round lines on stderr: %q", errs)
	}
}

// TestDiffFollowKill9 kills kverify --follow (this test binary as kverify) with SIGKILL while it
// runs rounds, and checks that the state it left is whole and a rerun resumes from it.
func TestDiffFollowKill9(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, recs(0, 1999)...)
		testkit.Produce(t, dst, topic, p, recs(0, 1999)...)
	}
	state := filepath.Join(t.TempDir(), "s.json")
	cmd := exec.Command(os.Args[0], "diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds,
		"--topic", topic, "--state", state, "--follow", "--interval", "1ms")
	cmd.Env = append(os.Environ(), "KVERIFY_AS_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rounds := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case rounds <- sc.Text():
			default: // never block kverify on its stderr
			}
		}
		close(rounds)
	}()
	// Let it verify, then give it more records to verify and kill it in the middle of that.
	<-rounds
	next := 2000
	for i := 0; i < 5; i++ {
		for p := int32(0); p < 2; p++ {
			testkit.Produce(t, src, topic, p, recs(next, next+499)...)
			testkit.Produce(t, dst, topic, p, recs(next, next+499)...)
		}
		next += 500
	}
	time.Sleep(time.Duration(5+time.Now().UnixNano()%20) * time.Millisecond) // anywhere in a round
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	st := readState(t, state) // whole: it is only ever replaced
	var ends [2]int64
	for p := int32(0); p < 2; p++ {
		ends[p] = st.Partition(p).SourceEnd
		if ends[p] < 2000 || ends[p] > int64(next) {
			t.Fatalf("partition %d: the state verified to %d, want 2000..%d", p, ends[p], next)
		}
	}
	code, out, errs := run(t, "diff", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--topic", topic, "--state", state, "--format", "json")
	if code != 0 {
		t.Fatalf("rerun: exit %d, want 0\n%s%s", code, errs, out)
	}
	for _, p := range decodeState(t, out).Partitions {
		if p.SourceStart != ends[p.Partition] || p.Matched != int64(next)-ends[p.Partition] || p.SourceEnd != int64(next) {
			t.Errorf("partition %d: rerun from %d with %d matched to %d, want from the state's %d to %d", p.Partition, p.SourceStart, p.Matched, p.SourceEnd, ends[p.Partition], next)
		}
	}
	t.Logf("killed with the state at %v of %d; the rerun resumed there", ends, next)
}
