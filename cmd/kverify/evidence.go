package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

// withEvidence renders the --evidence file of a diff run into its output (outs), when asked:
// per compared partition the range compared on each side and the root over its fingerprints
// (read again from both clusters after the diff), the tool version, the cluster IDs, the time
// and the SHA-256 of the report. Nothing is written here: writeResults writes it with the
// other outputs, or none.
func withEvidence(c *cli.Context, conn *clikit.Session, cfg verify.Config, res *verify.Result, format report.Format, title string, outs []output) error {
	k := -1
	for i, o := range outs {
		if o.flag == "--evidence" {
			k = i
		}
	}
	if k < 0 {
		return nil
	}
	e, err := buildEvidence(c.Context, conn, cfg, res)
	if err != nil {
		return clikit.Failf("--evidence: %w (nothing written)", err)
	}
	if e.ReportSHA256, e.ReportHashed, err = reportHash(c, format, res, title); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := digest.WriteEvidence(&b, e); err != nil {
		return clikit.Failf("--evidence: %w (nothing written)", err)
	}
	outs[k].data = b.Bytes()
	return nil
}

// reportHash is the SHA-256 of the report: of the bytes written to --out (rendered here the
// way writeResults renders them), or, when the report goes to standard output, of its JSON
// rendering, which does not depend on the terminal.
func reportHash(c *cli.Context, format report.Format, res *verify.Result, title string) (sum, what string, err error) {
	var b bytes.Buffer
	what = "the JSON rendering of the result (report on standard output)"
	if out := c.String("out"); out != "" {
		err = report.Write(&b, format, res, report.Options{Title: title})
		what = fmt.Sprintf("the --out file %s (format %s)", out, format)
	} else {
		err = report.Write(&b, report.JSON, res, report.Options{Title: title})
	}
	if err != nil {
		return "", "", clikit.Failf("--evidence: render the report: %w (nothing written)", err)
	}
	h := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(h[:]), what, nil
}

// buildEvidence reads the compared range of every compared partition again on both clusters
// and computes its root.
func buildEvidence(ctx context.Context, conn *clikit.Session, cfg verify.Config, res *verify.Result) (*digest.Evidence, error) {
	e := digest.NewEvidence()
	e.Tool, e.Created = "kverify "+clikit.VersionString(), time.Now().UTC()
	e.Compared, e.Isolation, e.Identical = cfg.Fields.Names(), digest.Isolation(!cfg.ReadUncommitted), res.Identical
	var err error
	e.Source = digest.EvidenceSide{Cluster: conn.Source.Alias, Topic: res.SourceTopic}
	e.Target = digest.EvidenceSide{Cluster: conn.Target.Alias, Topic: res.TargetTopic}
	if e.Source.ClusterID, err = clustermeta.ID(ctx, conn.Src, "source"); err != nil {
		return nil, err
	}
	if e.Target.ClusterID, err = clustermeta.ID(ctx, conn.Dst, "target"); err != nil {
		return nil, err
	}
	var parts []align.PartitionResult
	for _, pr := range res.Partitions {
		if pr.Err == "" && pr.NotCompared == "" {
			parts = append(parts, pr)
		}
	}
	e.Partitions = make([]digest.EvidencePart, len(parts))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(cfg.Parallel, 1))
	for i, pr := range parts {
		tFrom := pr.TargetStart
		if pr.TargetSkippedRange != nil {
			tFrom = pr.TargetSkippedRange.To + 1
		}
		e.Partitions[i].Partition = pr.Partition
		for _, side := range []struct {
			cl  *kgo.Client
			r   digest.Range
			dst *digest.RangeRoot
		}{
			{conn.Src, digest.Range{Cluster: "source", Topic: res.SourceTopic, Partition: pr.Partition, From: pr.SourceStart, To: pr.SourceEnd}, &e.Partitions[i].Source},
			{conn.Dst, digest.Range{Cluster: "target", Topic: res.TargetTopic, Partition: pr.Partition, From: tFrom, To: pr.TargetEnd}, &e.Partitions[i].Target},
		} {
			side.r.Fields, side.r.Committed = cfg.Fields, !cfg.ReadUncommitted
			g.Go(func() error {
				rr, err := rangeRoot(gctx, side.cl, side.r)
				mu.Lock()
				*side.dst = rr
				mu.Unlock()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return e, sameAsCompared(e, parts, cfg.To.Kind == verify.Latest)
}

// sameAsCompared checks that the ranges read again hold as many records as the comparison
// counted (source: matched + mismatched + missing; target, when it was read to its end:
// matched + mismatched + duplicated + extra), so that the roots are of what was compared, not
// of a log that changed since (compaction, retention, a recreated topic).
func sameAsCompared(e *digest.Evidence, parts []align.PartitionResult, wholeTarget bool) error {
	for i, pr := range parts {
		ep := e.Partitions[i]
		src := pr.Matched + pr.Mismatched + pr.Missing
		dst := pr.Matched + pr.Mismatched + pr.Duplicated + pr.Extra
		if ep.Source.Records != src || wholeTarget && ep.Target.Records != dst {
			return fmt.Errorf("partition %d changed between the comparison and the evidence read: the comparison counted %d source and %d target records, reading the ranges again gave %d and %d; run again", pr.Partition, src, dst, ep.Source.Records, ep.Target.Records)
		}
	}
	return nil
}

// rangeRoot reads r and returns its record count and root.
func rangeRoot(ctx context.Context, cl *kgo.Client, r digest.Range) (digest.RangeRoot, error) {
	p, err := digest.Read(ctx, cl, r, rootParams)
	if err != nil {
		return digest.RangeRoot{}, err
	}
	return digest.RangeRoot{From: r.From, To: r.To, Records: p.Records, Root: p.Root}, nil
}

// rootParams chunk a root-only read coarsely: its chunks are thrown away.
var rootParams = digest.Params{Bits: 30, MinRecords: 1 << 30, MaxRecords: 1 << 30}
