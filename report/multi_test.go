package report_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

// multiFixture is a flow of four topics, one of each status.
func multiFixture() *verify.MultiResult {
	topic := func(name string, parts ...align.PartitionResult) verify.TopicResult {
		r := verify.Result{SourceTopic: name, TargetTopic: "east." + name, Compared: []string{"key", "value", "headers"}, Partitions: parts}
		r.Identical = true
		for _, p := range parts {
			r.Summary.Add(p.Counts)
			if p.Err != "" || p.Differs() || p.NotCompared != "" {
				r.Identical = false
			}
			if p.NotCompared != "" {
				r.NotCompared = append(r.NotCompared, p.Partition)
			}
		}
		return verify.TopicResult{Result: r}
	}
	ok := func(p int32, n int64) align.PartitionResult {
		return align.PartitionResult{Partition: p, Counts: align.Counts{Matched: n}, SourceEnd: n, TargetEnd: n}
	}
	lost := ok(1, 27)
	lost.Missing, lost.SourceEnd, lost.MissingRanges = 3, 30, []align.SourceRange{{From: 10, To: 12}}
	mr := &verify.MultiResult{Kind: verify.MultiKind, Version: verify.MultiVersion, Selection: verify.Selection{
		Flow: "east->west", All: true, From: "earliest", To: "latest", Compared: []string{"key", "value", "headers"}, Isolation: "read_committed",
		Topics: []verify.SelectedTopic{{Source: "alpha", Target: "east.alpha", Partitions: 2}, {Source: "charlie", Target: "east.charlie", Partitions: 2},
			{Source: "echo", Target: "east.echo", Partitions: 1}, {Source: "empty", Target: "east.empty", Partitions: 1}},
	}, Topics: []verify.TopicResult{
		topic("alpha", ok(0, 10), ok(1, 12)),
		topic("charlie", ok(0, 30), lost),
		topic("echo", align.PartitionResult{Partition: 0, Err: "fetch target topic \"east.echo\" partition 0: NOT_LEADER"}),
		topic("empty", align.PartitionResult{Partition: 0, NotCompared: "nothing to compare: the source partition is empty"}),
	}}
	mr.Finish()
	return mr
}

func TestWriteMulti(t *testing.T) {
	mr := multiFixture()
	if mr.Total.Identical != 1 || mr.Total.Differs != 1 || mr.Total.Failed != 1 || mr.Total.NothingToCompare != 1 || mr.Identical {
		t.Fatalf("fixture totals %+v identical=%v", mr.Total, mr.Identical)
	}
	render := func(f report.Format, mr *verify.MultiResult) string {
		var b bytes.Buffer
		if err := report.WriteMulti(&b, f, mr, report.Options{}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return b.String()
	}
	t.Run("junit: one case per topic", func(t *testing.T) {
		doc := parseJUnit(t, render(report.JUnit, mr))
		if len(doc.Suites) != 1 {
			t.Fatalf("%d suites, want 1", len(doc.Suites))
		}
		got := map[string]string{}
		for _, c := range doc.Suites[0].Cases {
			switch {
			case c.Failure != nil:
				got[c.Name] = "failure"
			case c.Error != nil:
				got[c.Name] = "error"
			case c.Skipped != nil:
				got[c.Name] = "skipped"
			default:
				got[c.Name] = "pass"
			}
		}
		want := map[string]string{"alpha": "pass", "charlie": "failure", "echo": "error", "empty": "skipped"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cases %v, want %v", got, want)
		}
		if f := doc.Suites[0].Cases[1].Failure; f == nil || !strings.Contains(f.Body, "missing      source 10-12") {
			t.Errorf("charlie's failure does not name the missing offsets: %+v", f)
		}
	})
	t.Run("table, markdown, html: topics, then only the partitions that differ", func(t *testing.T) {
		for _, f := range []report.Format{report.Table, report.Markdown, report.HTML} {
			out := render(f, mr)
			for _, s := range []string{"DIFFERS", "alpha", "east.charlie", "charlie partition 1", "10-12", "echo partition 0", "fetch target topic", "total: 4 topics, 6 partitions"} {
				if !strings.Contains(out, s) {
					t.Errorf("%s lacks %q", f, s)
				}
			}
			if strings.Contains(out, "alpha partition") || strings.Contains(out, "charlie partition 0") {
				t.Errorf("%s lists a partition that does not differ", f)
			}
		}
		if html := render(report.HTML, mr); !strings.Contains(html, "Content-Security-Policy") || strings.Contains(html, "<script") {
			t.Errorf("the HTML page is not self-contained")
		}
	})
	t.Run("json round trip", func(t *testing.T) {
		back, err := verify.ParseMultiResult([]byte(render(report.JSON, mr)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Total, mr.Total) || len(back.Topics) != 4 || back.Topics[1].Status != verify.StatusDiffers {
			t.Errorf("read back %+v, want %+v", back.Total, mr.Total)
		}
	})
	t.Run("an empty shard is no verdict", func(t *testing.T) {
		empty := &verify.MultiResult{Kind: verify.MultiKind, Version: verify.MultiVersion, Selection: mr.Selection, Shard: &verify.Shard{Index: 1, Count: 2}, EmptyShard: true}
		empty.Finish()
		out := render(report.Table, empty)
		if empty.Identical || !strings.Contains(out, "EMPTY SHARD") || !strings.Contains(out, "0 partitions in shard 1/2") {
			t.Errorf("identical=%v:\n%s", empty.Identical, out)
		}
	})
}

// Every format of a multi-topic report says how many aborted records the targets hold and
// names the topics with a transaction open.
func TestWriteMultiAborted(t *testing.T) {
	mr := multiFixture()
	alpha := &mr.Topics[0]
	alpha.Aborted, alpha.AbortedCopies = 7, 6
	alpha.Transactions = []verify.TxnPartition{
		{Partition: 0, Txns: digest.Txns{Aborted: 7, AbortedCopies: 6, AbortedRanges: []align.TargetRange{{From: 3, To: 9}}}},
		{Partition: 1, Txns: digest.Txns{OpenTransaction: &align.TargetRange{From: 12, To: 14}}},
	}
	mr.Finish()
	for _, f := range []report.Format{report.Table, report.Markdown, report.HTML, report.JUnit, report.JSON} {
		var b bytes.Buffer
		if err := report.WriteMulti(&b, f, mr, report.Options{}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want := []string{"7 aborted records on the target (6 copies of committed records)", "a transaction is open on the target in east.alpha (1 partition)"}
		if f == report.JSON {
			want = []string{`"aborted": 7`, `"aborted_copies": 6`, `"open_transaction"`}
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q:\n%s", f, w, b.String())
			}
		}
	}
}
