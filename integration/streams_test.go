package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/reconcile"
)

// A real Kafka Streams application moved, judged by what it computes.
//
// The application (testdata/streams/WordCount.java, Kafka Streams 3.7.1 from Maven Central,
// compiled at test time) splits lines into words, repartitions them by word and counts them
// in a state store, emitting "<word>=<count>" for every word it reads. It runs on a 2.3.0
// source over lines of six words (null keys, so every word and every line repeats), is stopped
// while a second batch of lines is still being processed, and its topics (input, output,
// repartition, changelog) are mirrored by kmirror to 3.7.1. kreconcile groups --apply must
// plan the application as one unit and commit every partition of it, or, where content cannot
// prove E(G) of one partition (MirrorMaker 2's lane, when a repartition partition holds a
// single word: a run of identical records), refuse the whole application and commit none of
// it; the application then runs
// on the target to the end of its input, with a fresh state directory or the one kept from
// the source. Judged:
//   - its final count of every word (the last update on the output topic, read_committed on
//     the target) equals the count of that word in all lines, which is what the same
//     application that never moved computes;
//   - the target run emits exactly one update per word the source run had not processed (the
//     words of all lines less the updates on the source's output topic).

const (
	swLines = 400 // lines per batch; two batches
	swParts = 3
)

// swWords are the words of the lines: few enough that every record repeats, enough that each
// repartition partition holds several of them.
var swWords = []string{"error", "warn", "info", "debug", "ok", "retry", "start", "stop", "open", "close", "read", "write",
	"get", "put", "send", "ack", "sync", "lock", "wait", "done", "fail", "load", "save", "scan"}

// swLinesOf are n lines of 1 to 5 words, from seed.
func swLinesOf(seed uint64, n int) ([]*kgo.Record, int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []*kgo.Record
	words := 0
	for range n {
		var ws []string
		for range 1 + rng.IntN(5) {
			ws = append(ws, swWords[rng.IntN(len(swWords))])
		}
		words += len(ws)
		out = append(out, &kgo.Record{Value: []byte(strings.Join(ws, " "))})
	}
	return out, words
}

// swProduce writes lines round-robin over the input's partitions, one batch per partition.
func swProduce(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, lines []*kgo.Record) {
	t.Helper()
	for p := range int32(swParts) {
		var batch []*kgo.Record
		for j := int(p); j < len(lines); j += swParts {
			batch = append(batch, lines[j])
		}
		bedProduce(ctx, t, c, topic, p, batch)
	}
}

// swApp is the compiled application: its class directory and classpath, and the group
// protocol it runs with ("" for classic).
type swApp struct{ java, classpath, protocol string }

// swStreams is the Kafka Streams the application runs on a cluster of version v: on Kafka 4,
// 4.3.1, as a member of a streams group (group.protocol=streams, KIP-1071); on older brokers
// 3.7.1, in a classic group (the newest that runs exactly_once v1 on 2.3.0).
func swStreams(v string) string {
	if v == cluster.V431 {
		return cluster.V431
	}
	return cluster.V371
}

// swCompile compiles the application against Kafka Streams streams (swStreams); on 4.3.1 it
// runs in a streams group.
func swCompile(t *testing.T, streams string) swApp {
	t.Helper()
	ctx := bedCtx(t, 10*time.Minute)
	lib, err := cluster.StreamsLib(ctx, streams)
	if err != nil {
		t.Fatalf("Kafka Streams jars: %v", err)
	}
	java, err := cluster.Java()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	javac := filepath.Join(filepath.Dir(java), "javac")
	classes := t.TempDir()
	cp := filepath.Join(lib, "*")
	src, err := filepath.Abs(filepath.Join("testdata", "streams", "WordCount.java"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, javac, "-cp", cp, "-d", classes, src).CombinedOutput(); err != nil {
		t.Fatalf("javac WordCount.java (needs a JDK 17 with javac: apt-get install openjdk-17-jdk-headless): %v\n%s", err, out)
	}
	a := swApp{java: java, classpath: cp + string(os.PathListSeparator) + classes}
	if streams == cluster.V431 {
		a.protocol = "streams"
	}
	return a
}

// swRun is a running instance of the application.
type swRun struct {
	cmd    *exec.Cmd
	log    string
	exited chan error
}

// start runs the application on c with state in stateDir.
func (a swApp) start(t *testing.T, c cluster.Cluster, id, stateDir, guarantee, input, output string) *swRun {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "wordcount.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", a.classpath, "WordCount",
		strings.Join(c.Bootstrap(), ","), id, stateDir, guarantee, input, output}
	if a.protocol != "" {
		args = append(args, a.protocol)
	}
	cmd := exec.Command(a.java, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start WordCount: %v", err)
	}
	r := &swRun{cmd: cmd, log: logPath, exited: make(chan error, 1)}
	go func() { r.exited <- cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

// stop sends SIGTERM and waits for a clean close (the application commits and writes its
// checkpoints), at most a minute.
func (r *swRun) stop(t *testing.T) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		// A JVM ended by SIGTERM exits 143 once its shutdown hooks ran.
		if err != nil && r.cmd.ProcessState.ExitCode() != 143 {
			t.Fatalf("WordCount exited with %v:\n%s", err, r.tail())
		}
	case <-time.After(time.Minute):
		t.Fatalf("WordCount did not close within a minute:\n%s", r.tail())
	}
	if !strings.Contains(r.tail(), "CLOSED") {
		t.Fatalf("WordCount did not close cleanly:\n%s", r.tail())
	}
}

func (r *swRun) tail() string {
	b, _ := os.ReadFile(r.log)
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// swCaughtUp says what is left for application id on c: "" once its commits on input and on
// its repartition topic are at the ends of those topics (read_committed) and it runs.
func swCaughtUp(ctx context.Context, t *testing.T, c cluster.Cluster, r *swRun, id, input string) string {
	select {
	case err := <-r.exited:
		t.Fatalf("WordCount exited (%v):\n%s", err, r.tail())
	default:
	}
	offs, err := bedAdmin(t, c).FetchOffsets(ctx, id)
	if err != nil {
		return fmt.Sprintf("fetch offsets of %s: %v", id, err) // the coordinator may still be loading
	}
	for _, topic := range []string{input, id + "-counts-repartition"} {
		for p := range int32(swParts) {
			o, ok := offs.Lookup(topic, p)
			if !ok || o.Err != nil || o.At < 0 {
				return fmt.Sprintf("%s/%d: no commit yet", topic, p)
			}
			at := &o.At
			// Records a read_committed reader finds from the commit on (transaction markers
			// after it are no records).
			if n := bedRecordsFrom(ctx, t, c, topic, p, *at); n > 0 {
				return fmt.Sprintf("%s/%d: %d records after the commit %d", topic, p, n, *at)
			}
		}
	}
	return ""
}

// swWaitEmpty waits until group id has no member on c: Kafka Streams does not leave a classic
// group on close, so the group empties when the session times out (6 s, WordCount.java); a
// streams group it leaves at once.
func swWaitEmpty(ctx context.Context, t *testing.T, c cluster.Cluster, id string) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap())
	bedWaitFor(ctx, t, 250*time.Millisecond, "group "+id+" to have no member", func() string {
		gs, err := mm2.DescribeGroups(ctx, cl, nil, id)
		if err != nil {
			return err.Error()
		}
		if g := gs[id]; g.Err != nil || g.State != "Empty" {
			return fmt.Sprintf("%s group, state %q, %v", g.Type, g.State, g.Err)
		}
		return ""
	})
}

func fmtOff(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// swCounts reads the output topic on c (read_committed) and returns the last count of every
// word and how many updates it holds.
func swCounts(ctx context.Context, t *testing.T, c cluster.Cluster, output string) (map[string]int, int) {
	t.Helper()
	last, n := map[string]int{}, 0
	for p := range int32(swParts) {
		for _, r := range bedReadPartition(ctx, t, c, output, p, 0) {
			w, v, ok := strings.Cut(string(r.Value), "=")
			var k int
			if _, err := fmt.Sscan(v, &k); !ok || err != nil {
				t.Fatalf("output record %q at %s/%d@%d", r.Value, output, p, r.Offset)
			}
			last[w] = k
			n++
		}
	}
	return last, n
}

// swLane is one move of the application.
type swLane struct {
	mirror     string // "kmirror" or "mm2"
	guarantee  string // on the source; "eos": the exactly-once the source's brokers allow
	dGuarantee string // on the target
	keep       bool   // the state directory kept from the source
	rewrite    bool   // the kept directory's .checkpoint files rewritten by kreconcile state
}

// TestStreamsAppMoved moves the word count between the clusters of KMIGRATE_PAIR (2.3.0 to
// 3.7.1 unless set; scripts/nightly.sh runs the other pairs) with kmirror, and with the
// MirrorMaker 2 of the target's release, and kreconcile. On a Kafka 4 target the application
// runs in a streams group (KIP-1071) where it ran in a classic group on the source.
func TestStreamsAppMoved(t *testing.T) {
	sv, dv := bedPair(t)
	swMoved(t, sv, dv, []swLane{
		{"kmirror", "at_least_once", "at_least_once", false, false},
		{"kmirror", "at_least_once", "at_least_once", true, true},
		{"kmirror", "eos", "exactly_once_v2", false, false},
		{"kmirror", "eos", "exactly_once_v2", true, false},
		{"mm2", "at_least_once", "at_least_once", false, false},
		{"mm2", "eos", "exactly_once_v2", true, true},
	})
}

// TestStreamsGroupMoved moves the word count as a streams group (KIP-1071,
// group.protocol=streams) from Kafka 4.3.1 to 4.3.1: kreconcile takes the application's topics
// from the topology the source's group coordinator keeps. Kafka Streams 4.3.1 keeps its
// changelog offsets inside its stores (KIP-1035): the kept directory (kmirror's copy, whose
// changelog offsets run ahead) is refused by kreconcile state and kept unchanged.
func TestStreamsGroupMoved(t *testing.T) {
	swMoved(t, cluster.V431, cluster.V431, []swLane{
		{"kmirror", "at_least_once", "at_least_once", true, false},
		{"mm2", "eos", "exactly_once_v2", false, false},
	})
}

// swMoved moves the application from a cluster of version sv to one of dv, once per lane.
func swMoved(t *testing.T, sv, dv string, lanes []swLane) {
	bedParallelLong(t)
	srcApp := swCompile(t, swStreams(sv))
	dstApp := srcApp
	if swStreams(dv) != swStreams(sv) {
		dstApp = swCompile(t, swStreams(dv))
	}
	bins := bedBuild(t, "kmirror", "kreconcile")
	sName, dName := bedPairNames("sw", sv, dv)
	src := cluster.StartT(t, cluster.Spec{Version: sv, Name: sName})
	dst := cluster.StartT(t, cluster.Spec{Version: dv, Name: dName})
	side := func(v string, a swApp) string {
		if a.protocol == "streams" {
			return v + " (streams group)"
		}
		return v
	}
	pair := side(sv, srcApp) + "->" + side(dv, dstApp)
	// exactly_once (v1) is what a 2.3.0 source allows; v2 needs brokers of 2.5 or later.
	eos := "exactly_once_v2"
	if sv == cluster.V230 {
		eos = "exactly_once"
	}
	var table strings.Builder
	table.WriteString("| mirror | pair | guarantee | state | final counts | updates on the target | words left on the source | changelog records restored on the target |\n|---|---|---|---|---|---|---|---|\n")
	for i, tc := range lanes {
		if tc.guarantee == "eos" {
			tc.guarantee = eos
		}
		if tc.rewrite && srcApp.protocol == "streams" {
			// Kafka Streams 4.3 keeps its changelog offsets inside its stores (KIP-1035):
			// nothing can rewrite them (kreconcile state refuses, as the kept lanes check),
			// so this lane starts fresh.
			tc.keep, tc.rewrite = false, false
		}
		state := "fresh"
		switch {
		case tc.rewrite:
			state = "kept, rewritten"
		case tc.keep:
			state = "kept"
		}
		t.Run(tc.mirror+"-"+tc.guarantee+"-"+state, func(t *testing.T) {
			ctx := bedCtx(t, 8*time.Minute)
			id := bedUnique("wordcount")
			input, output := bedUnique("lines"), bedUnique("counts")
			for _, topic := range []string{input, output} {
				bedCreateTopic(t, src, topic, swParts, nil)
			}
			a, wordsA := swLinesOf(uint64(i), swLines)
			b, wordsB := swLinesOf(uint64(i)+100, swLines)
			swProduce(ctx, t, src, input, a)
			srcState := t.TempDir()
			run := srcApp.start(t, src, id, srcState, tc.guarantee, input, output)
			bedWaitFor(ctx, t, 200*time.Millisecond, "the application to process the first lines on the source", func() string {
				return swCaughtUp(ctx, t, src, run, id, input)
			})
			// The second batch arrives and the application is stopped while it works on it.
			swProduce(ctx, t, src, input, b)
			run.stop(t)
			swWaitEmpty(ctx, t, src, id)
			_, srcUpdates := swCounts(ctx, t, src, output)
			left := wordsA + wordsB - srcUpdates

			topics := strings.Join([]string{input, output, id + "-.*"}, "|")
			copied := func(what string) {
				for _, topic := range []string{input, output, id + "-counts-repartition", id + "-counts-changelog"} {
					want := sumRecords(ctx, t, src, topic)
					bedWaitFor(ctx, t, 300*time.Millisecond, what+" to copy "+topic, func() string { return mirBehind(ctx, t, dst, topic, want) })
				}
			}
			var props, flow string
			switch tc.mirror {
			case "kmirror":
				props, flow = mirProps(t, src, dst, "source", "target", topics), "source->target"
				m := mirStart(t, filepath.Join(bins, "kmirror"), props, flow, "kmirror-"+id)
				copied("kmirror")
				m.term(t)
			default:
				text := rcProperties(src, dst, topics)
				props, flow = filepath.Join(t.TempDir(), "mm2.properties"), "source->destination"
				if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
				m := cluster.StartMM2T(t, cluster.MM2Spec{Version: dv, Properties: text, Target: "destination", Name: "mm2-" + id})
				copied("MirrorMaker 2")
				if err := m.Stop(ctx); err != nil {
					t.Logf("stop MirrorMaker 2: %v", err)
				}
			}

			backup := filepath.Join(t.TempDir(), "backup.json")
			code, out, errOut := bedOutput(t, filepath.Join(bins, "kreconcile"), "groups", "--mm2-config", props, "--flow", flow,
				"--group", id, "--apply", "--backup", backup, "--format", "json")
			var res reconcile.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("kreconcile groups --apply: exit %d, JSON: %v\n%s\n%s", code, err, errOut, out)
			}
			if len(res.Groups) != 1 || res.Groups[0].App == nil {
				t.Fatalf("kreconcile did not plan the application as one unit:\n%s", out)
			}
			g := res.Groups[0]
			if srcApp.protocol == "streams" && (g.SourceType != mm2.GroupTypeStreams || !strings.Contains(g.App.RecognisedBy, "topology")) {
				t.Fatalf("source group of type %q recognised by %q, want a streams group known by its topology", g.SourceType, g.App.RecognisedBy)
			}
			if i == 0 {
				// The plan as an operator reads it, after the switch.
				_, text, _ := bedOutput(t, filepath.Join(bins, "kreconcile"), "groups", "--mm2-config", props, "--flow", flow, "--group", id)
				t.Logf("kreconcile groups --group %s after --apply:\n%s", id, text)
			}
			if !g.App.Ready {
				// Refused: only where content cannot prove a partition, and then wholly.
				var unproven []string
				for _, p := range g.Partitions {
					if p.ExactTarget == nil {
						unproven = append(unproven, fmt.Sprintf("%s/%d %s: %s", p.Topic, p.Partition, p.Status, p.Reason))
					}
				}
				if tc.mirror == "kmirror" || len(unproven) == 0 || g.Applied || !strings.Contains(g.Refused, "switches as a whole") || code != 1 {
					t.Fatalf("kreconcile refused the application (exit %d, applied %v, refused %q), want it applied, or refused as a whole for partitions content cannot prove (%v):\n%s",
						code, g.Applied, g.Refused, unproven, out)
				}
				t.Logf("application refused as a whole, nothing committed: %s", strings.Join(unproven, "; "))
				fmt.Fprintf(&table, "| %s | %s | %s, then %s | %s | refused as a whole, nothing committed: %d partitions content cannot prove | - | %d | - |\n",
					tc.mirror, pair, tc.guarantee, tc.dGuarantee, state, len(unproven), left)
				return
			}
			if code != 0 || !g.Applied {
				t.Fatalf("kreconcile groups --apply: exit %d, applied %v\n%s\n%s", code, g.Applied, errOut, out)
			}
			t.Logf("application %s: inputs %v, repartition %v, changelogs %v, %d partitions applied; state %s",
				id, g.App.Inputs, g.App.Repartition, g.App.Changelogs, len(g.Partitions), swStateLines(g.App))

			dstState := t.TempDir()
			if tc.keep {
				if out, err := exec.Command("cp", "-a", srcState+"/.", dstState).CombinedOutput(); err != nil {
					t.Fatalf("keep the state directory: %v\n%s", err, out)
				}
			}
			if tc.keep && srcApp.protocol == "streams" {
				// Kafka Streams 4.3 keeps the offsets inside its stores: nothing to rewrite.
				code, out, _ := bedOutput(t, filepath.Join(bins, "kreconcile"), "state", "--mm2-config", props, "--flow", flow, "--group", id, "--state-dir", dstState)
				if code != 1 || !strings.Contains(out, "KIP-1035") {
					t.Fatalf("kreconcile state on a directory of Kafka Streams 4.3: exit %d, want 1 and why (KIP-1035):\n%s", code, out)
				}
			}
			var rewritten map[string]int64 // "topic/partition" -> where the store restored from the target resumes
			if tc.rewrite {
				rewritten = swRewriteState(t, filepath.Join(bins, "kreconcile"), props, flow, id, dstState, g.App)
			}
			_, before := swCounts(ctx, t, dst, output)
			run = dstApp.start(t, dst, id, dstState, tc.dGuarantee, input, output)
			bedWaitFor(ctx, t, 200*time.Millisecond, "the application to process every line on the target", func() string {
				return swCaughtUp(ctx, t, dst, run, id, input)
			})
			run.stop(t)
			// The application moved on the target: a rollback must not take back part of it
			// (once its group is Empty there, else it is refused for its member).
			swWaitEmpty(ctx, t, dst, id)
			if code, out, errOut := bedOutput(t, filepath.Join(bins, "kreconcile"), "rollback", "--mm2-config", props, "--flow", flow, "--backup", backup); code != 1 || !strings.Contains(out+errOut, "switches back as a whole") {
				t.Errorf("kreconcile rollback after the application ran on the target: exit %d, want 1 and nothing restored:\n%s\n%s", code, out, errOut)
			}
			restored := swRestores(t, run)
			for _, r := range restored {
				if from, ok := rewritten[fmt.Sprintf("%s/%d", r.topic, r.partition)]; ok && r.from != from {
					t.Errorf("%s/%d: the store restored from target offset %d, want %d: the rewritten checkpoint was not where the store resumes", r.topic, r.partition, r.from, from)
				}
			}
			final, all := swCounts(ctx, t, dst, output)
			want := map[string]int{}
			for _, recs := range [][]*kgo.Record{a, b} {
				for _, r := range recs {
					for _, w := range strings.Fields(string(r.Value)) {
						want[w]++
					}
				}
			}
			equal := fmt.Sprint(final) == fmt.Sprint(want)
			updates := all - before
			var total int64
			for _, r := range restored {
				total += r.records
			}
			fmt.Fprintf(&table, "| %s | %s | %s, then %s | %s | %s | %d | %d | %d |\n", tc.mirror, pair, tc.guarantee, tc.dGuarantee, state,
				map[bool]string{true: "equal", false: "NOT equal"}[equal], updates, left, total)
			if tc.rewrite && total != 0 {
				t.Errorf("the stores restored %d changelog records from rewritten checkpoints that name the changelogs' ends: want 0", total)
			}
			if !equal {
				t.Errorf("final counts on the target %v, want %v (the application that never moved)", final, want)
			}
			if updates != left {
				t.Errorf("the target run emitted %d updates for %d words the source run had not processed", updates, left)
			}
		})
	}
	t.Logf("Kafka Streams word count moved:\n%s", table.String())
}

// swRewriteState runs kreconcile state --apply on the application's kept state directory and
// returns, per changelog partition, the target offset the rewritten checkpoint makes its
// store resume at (entry + 1). Every entry must be translated, and land where the changelog's
// source end does on the target (the plan's state line): a clean close checkpoints the last
// record each store wrote, the changelog's last record.
func swRewriteState(t *testing.T, kreconcile, props, flow, id, stateDir string, app *reconcile.App) map[string]int64 {
	t.Helper()
	code, out, errOut := bedOutput(t, kreconcile, "state", "--mm2-config", props, "--flow", flow, "--group", id,
		"--state-dir", stateDir, "--apply", "--backup", filepath.Join(t.TempDir(), "state-backup.json"), "--format", "json")
	var sp reconcile.StatePlan
	if err := json.Unmarshal([]byte(out), &sp); err != nil || code != 0 || !sp.Applied {
		t.Fatalf("kreconcile state --apply: exit %d, applied %v (%v)\n%s\n%s", code, sp.Applied, err, errOut, out)
	}
	ends := map[string]int64{}
	for _, s := range app.State {
		if s.ExactTarget != nil {
			ends[fmt.Sprintf("%s/%d", s.Topic, s.Partition)] = *s.ExactTarget
		}
	}
	resume := map[string]int64{}
	var lines []string
	for _, f := range sp.Files {
		for _, e := range f.Entries {
			key := fmt.Sprintf("%s/%d", e.Topic, e.Partition)
			if e.Target == nil {
				t.Fatalf("%s %s: source %d not translated (%s)", f.Path, key, e.Offset, e.Kept)
			}
			resume[key] = *e.Target + 1
			lines = append(lines, fmt.Sprintf("%s %s %d->%d", f.Path, key, e.Offset, *e.Target))
			if end, ok := ends[key]; ok && *e.Target+1 != end {
				t.Errorf("%s %s: checkpoint %d rewritten to %d: the store resumes at %d, want %d, the changelog's source end on the target", f.Path, key, e.Offset, *e.Target, *e.Target+1, end)
			}
		}
	}
	t.Logf("kreconcile state --apply rewrote %d .checkpoint files: %s", len(sp.Files), strings.Join(lines, ", "))
	return resume
}

// swRestore is a store restore the application printed.
type swRestore struct {
	topic         string
	partition     int32
	from, records int64
}

// swRestores reads the restores of a stopped run from its log: where each began
// (RESTORE_START) and how many records it restored (RESTORED).
func swRestores(t *testing.T, r *swRun) []swRestore {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []swRestore
	at := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 5 && f[0] == "RESTORE_START":
			p, _ := strconv.ParseInt(f[2], 10, 32)
			from, _ := strconv.ParseInt(f[3], 10, 64)
			at[f[1]+"/"+f[2]] = len(out)
			out = append(out, swRestore{topic: f[1], partition: int32(p), from: from})
		case len(f) == 4 && f[0] == "RESTORED":
			n, _ := strconv.ParseInt(f[3], 10, 64)
			if k, ok := at[f[1]+"/"+f[2]]; ok {
				out[k].records = n
			}
		}
	}
	return out
}

// swStateLines is the application's changelog translations, one "topic/p end->E" each.
func swStateLines(a *reconcile.App) string {
	var out []string
	for _, s := range a.State {
		out = append(out, fmt.Sprintf("%s/%d %d->%s", s.Topic, s.Partition, s.SourceCommitted, fmtOff(s.ExactTarget)))
	}
	return strings.Join(out, ", ")
}
