package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// TestMirrorStartupBench is kmirror's start-up benchmark (scripts/bench-startup.sh,
// make bench-startup): kmirror's time from exec to its first record acknowledged by the
// target, on Kafka 2.3.0 -> 3.7.1, for
//
//   - a fresh flow: a new flow each run (new group, map topic and target topic), on a source
//     topic of KMIGRATE_STARTUP_FRESH_PARTITIONS partitions (default 6) with one record each;
//   - a resumed flow: a flow whose map already holds every partition of a source topic of
//     KMIGRATE_STARTUP_PARTITIONS partitions (default 1000); before each run one record is
//     added to every partition; the same again with fencing none
//     (B.exactly.once.source.support=disabled: one idempotent producer, no transactional ids).
//
// The time is the engine's own (the "first record produced" log line: since_start_ms counts
// from the process's package initialisation, just after exec, to the produce response of the
// first record) with its phases; the harness also times exec to the line appearing in the log.
// With KMIGRATE_STARTUP_BASELINE=<git revision> the kmirror of that revision (it must log the
// line too; or the path of a kmirror binary) runs in the same bed, alternating with the current one, so before and after are a
// ratio of the same run. KMIGRATE_STARTUP_RUNS sets the runs per case (default 5). It runs only
// with KMIGRATE_BENCH=1 and prints a Markdown table (also to KMIGRATE_BENCH_OUT when set).
func TestMirrorStartupBench(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("set KMIGRATE_BENCH=1 (or run make bench-startup) to run the start-up benchmark")
	}
	runs := envInt(t, "KMIGRATE_STARTUP_RUNS", 5)
	freshParts := int32(envInt(t, "KMIGRATE_STARTUP_FRESH_PARTITIONS", 6))
	resumedParts := int32(envInt(t, "KMIGRATE_STARTUP_PARTITIONS", 1000))
	// A 2 GiB heap: the test default (384 MiB) runs out with thousands of partitions a broker.
	flags := []string{"-Xmx2g"}
	src := cluster.StartT(t, cluster.Spec{Version: "2.3.0", Name: "startup-src", JVMFlags: flags})
	dst := cluster.StartT(t, cluster.Spec{Version: "3.7.1", Name: "startup-dst", JVMFlags: flags})
	if t.Failed() || t.Skipped() {
		return
	}
	bins := []startupBin{{"current", filepath.Join(bedBuild(t, "kmirror"), "kmirror")}}
	if rev := os.Getenv("KMIGRATE_STARTUP_BASELINE"); rev != "" {
		if st, err := os.Stat(rev); err == nil && st.Mode().IsRegular() {
			bins = append(bins, startupBin{"baseline " + filepath.Base(rev), rev}) // a kmirror binary built before
		} else {
			bins = append(bins, startupBin{"baseline " + rev, buildAt(t, rev)})
		}
	}
	ctx := bedCtx(t, 50*time.Minute)
	fresh, resumed := bedUnique("su-fresh"), bedUnique("su-resumed")
	bedCreateTopic(t, src, fresh, freshParts, nil)
	bedCreateTopic(t, src, resumed, resumedParts, nil)
	startupSeed(ctx, t, src, fresh, freshParts)
	startupSeed(ctx, t, src, resumed, resumedParts)

	results := map[string]map[string][]startupRun{}
	for i, b := range bins {
		results[b.name] = map[string][]startupRun{}
		// Prime the resumed flow: everything mirrored and committed, the map holds every partition.
		for _, alias := range []string{fmt.Sprintf("r%d", i), fmt.Sprintf("n%d", i)} {
			p := mirStart(t, b.path, startupProps(t, src, dst, alias, resumed), alias+"->B", "startup-prime-"+alias)
			startupWait(ctx, t, p, int64(resumedParts))
			p.term(t)
		}
	}
	for run := range runs {
		startupSeed(ctx, t, src, resumed, resumedParts)
		for k := range bins {
			i := (run + k) % len(bins) // alternate which binary goes first
			b := bins[i]
			alias := fmt.Sprintf("f%d%d", i, run)
			r := startupOnce(ctx, t, b.path, startupProps(t, src, dst, alias, fresh), alias, fmt.Sprintf("startup-fresh-%d-%d", i, run))
			results[b.name]["fresh"] = append(results[b.name]["fresh"], r)
			alias = fmt.Sprintf("r%d", i)
			r = startupOnce(ctx, t, b.path, startupProps(t, src, dst, alias, resumed), alias, fmt.Sprintf("startup-resumed-%d-%d", i, run))
			results[b.name]["resumed"] = append(results[b.name]["resumed"], r)
			alias = fmt.Sprintf("n%d", i)
			r = startupOnce(ctx, t, b.path, startupProps(t, src, dst, alias, resumed), alias, fmt.Sprintf("startup-nofence-%d-%d", i, run))
			results[b.name]["resumed, no fence"] = append(results[b.name]["resumed, no fence"], r)
		}
	}
	out := startupTable(bins, results, freshParts, resumedParts, runs)
	t.Log(out)
	if path := os.Getenv("KMIGRATE_BENCH_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Errorf("write %s: %v", path, err)
		}
	}
}

type startupBin struct{ name, path string }

// startupRun is one start: the engine's time to the first record, the harness's (exec to the
// log line) and the phases.
type startupRun struct {
	since, seen time.Duration
	phases      [][2]string // name, ms
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// buildAt builds the kmirror of git revision rev (from an export of that tree).
func buildAt(t *testing.T, rev string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C .. archive %q | tar -x -C %q", rev, dir))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("export revision %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(t.TempDir(), "kmirror")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kmirror")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kmirror at %s: %v\n%s", rev, err, out)
	}
	return bin
}

// startupProps is the flow alias->B mirroring topic (default replication policy: the target
// topic is alias.topic, so flows never share a target topic).
func startupProps(t *testing.T, src, dst cluster.Cluster, alias, topic string) string {
	t.Helper()
	text := fmt.Sprintf("clusters=%[1]s,B\n%[1]s.bootstrap.servers=%[2]s\nB.bootstrap.servers=%[3]s\n%[1]s->B.enabled=true\n%[1]s->B.topics=%[4]s\n"+
		"replication.factor=1\noffset-syncs.topic.replication.factor=1\ncheckpoints.topic.replication.factor=1\noffset-syncs.topic.location=target\n",
		alias, strings.Join(src.Bootstrap(), ","), strings.Join(dst.Bootstrap(), ","), topic)
	if strings.HasPrefix(alias, "n") {
		text += "B.exactly.once.source.support=disabled\n" // fencing none: one idempotent producer
	}
	path := filepath.Join(t.TempDir(), alias+".properties")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startupSeed writes one record to every partition of topic.
func startupSeed(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, partitions int32) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := make([]*kgo.Record, partitions)
	for p := range partitions {
		recs[p] = &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "startup-%d-%d", p, time.Now().UnixNano())}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("seed %s: %v", topic, err)
	}
	cl.Close()
}

var recordsRE = regexp.MustCompile(`(?m)^kmirror_records_total (\d+)$`)

// startupWait waits until the process has mirrored n records (its metrics say so).
func startupWait(ctx context.Context, t *testing.T, p *mirProc, n int64) {
	t.Helper()
	bedWaitFor(ctx, t, 100*time.Millisecond, "kmirror to mirror the records", func() string {
		resp, err := http.Get(p.metrics)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 64<<10)
		for {
			k, err := resp.Body.Read(buf)
			b.Write(buf[:k])
			if err != nil {
				break
			}
		}
		m := recordsRE.FindStringSubmatch(b.String())
		if m == nil {
			return "no kmirror_records_total yet"
		}
		if got, _ := strconv.ParseInt(m[1], 10, 64); got < n {
			return fmt.Sprintf("%d of %d records", got, n)
		}
		return ""
	})
}

var (
	firstRE = regexp.MustCompile(`msg="first record produced".*since_start_ms=(\d+)(.*)`)
	phaseRE = regexp.MustCompile(`phases_ms\.(\w+)=(\d+)`)
)

// startupOnce starts kmirror, waits for its first record, stops it (SIGTERM, drained) and
// returns the figures.
func startupOnce(ctx context.Context, t *testing.T, bin, props, alias, name string) startupRun {
	t.Helper()
	start := time.Now()
	p := mirStart(t, bin, props, alias+"->B", name)
	var r startupRun
	bedWaitFor(ctx, t, 5*time.Millisecond, name+": the first record produced", func() string {
		if p.cmd.ProcessState != nil {
			t.Fatalf("%s exited before its first record", name)
		}
		b, _ := os.ReadFile(p.log)
		m := firstRE.FindSubmatch(b)
		if m == nil {
			return "no \"first record produced\" line yet"
		}
		r.seen = time.Since(start)
		ms, _ := strconv.Atoi(string(m[1]))
		r.since = time.Duration(ms) * time.Millisecond
		for _, ph := range phaseRE.FindAllSubmatch(m[2], -1) {
			r.phases = append(r.phases, [2]string{string(ph[1]), string(ph[2])})
		}
		return ""
	})
	p.term(t)
	return r
}

// startupTable renders the results: per binary and case, median and max, the harness's median,
// the phases of the median run, and the goal ratio (median / goal).
func startupTable(bins []startupBin, res map[string]map[string][]startupRun, freshParts, resumedParts int32, runs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kmirror start-up, Kafka 2.3.0 -> 3.7.1, %d runs per case; fresh: %d partitions, resumed: %d partitions of map\n\n", runs, freshParts, resumedParts)
	b.WriteString("| kmirror | case | median to first record | max | median exec to log line | goal | median / goal | phases of the median run (ms) |\n|---|---|---|---|---|---|---|---|\n")
	goals := map[string]time.Duration{"fresh": 500 * time.Millisecond, "resumed": time.Second, "resumed, no fence": time.Second}
	for _, bin := range bins {
		for _, c := range []string{"fresh", "resumed", "resumed, no fence"} {
			rs := slices.Clone(res[bin.name][c])
			slices.SortFunc(rs, func(x, y startupRun) int { return int(x.since - y.since) })
			seen := make([]time.Duration, len(rs))
			for i, r := range rs {
				seen[i] = r.seen
			}
			slices.Sort(seen)
			med := rs[len(rs)/2]
			var ph []string
			for _, p := range med.phases {
				ph = append(ph, p[0]+"="+p[1])
			}
			fmt.Fprintf(&b, "| %s | %s | %d ms | %d ms | %d ms | %v | %.2f | %s |\n", bin.name, c, med.since.Milliseconds(), rs[len(rs)-1].since.Milliseconds(),
				seen[len(seen)/2].Milliseconds(), goals[c], float64(med.since)/float64(goals[c]), strings.Join(ph, " "))
		}
	}
	return b.String()
}
