package digest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// ReadRoot reads r and returns its record count and root (its chunks are not kept), and of a
// target range read read_committed the aborted records passed over (RangeRoot.Aborted).
func ReadRoot(ctx context.Context, cl *kgo.Client, r Range) (RangeRoot, error) {
	p, err := Read(ctx, cl, r, rootParams)
	if err != nil {
		return RangeRoot{}, err
	}
	rr := RangeRoot{From: r.From, To: r.To, Records: p.Records, Root: p.Root}
	if p.Txns != nil {
		rr.Aborted, rr.AbortedCopies = &p.Txns.Aborted, &p.Txns.AbortedCopies
	}
	return rr, nil
}

// rootParams chunk a root-only read coarsely: its chunks are thrown away.
var rootParams = Params{Bits: 30, MinRecords: 1 << 30, MaxRecords: 1 << 30}

// Check is one comparison CheckEvidence made: what was compared, and whether it matched.
type Check struct {
	OK   bool
	What string
}

// EvidenceSources are what CheckEvidence recomputes an evidence file from; any may be empty.
type EvidenceSources struct {
	Report  string   // a report file: its SHA-256 must be the evidence's
	Digests []string // digest files, each of one side, covering exactly the recorded ranges
	// Clusters are read again, by side ("source", "target"): each must have the recorded
	// cluster ID.
	Clusters map[string]EvidenceCluster
}

// EvidenceCluster is a cluster CheckEvidence reads, and how its answer names it.
type EvidenceCluster struct {
	Client *kgo.Client
	Name   string
}

// EvidenceCheck is what CheckEvidence found: every check in order, and by side what the
// side was checked from (a side not in CheckedFrom was not checked).
type EvidenceCheck struct {
	Checks      []Check
	CheckedFrom map[string]string
}

// Mismatches are the checks that did not match.
func (ec *EvidenceCheck) Mismatches() []string {
	var bad []string
	for _, c := range ec.Checks {
		if !c.OK {
			bad = append(bad, c.What)
		}
	}
	return bad
}

func (ec *EvidenceCheck) add(ok bool, format string, args ...any) {
	ec.Checks = append(ec.Checks, Check{OK: ok, What: fmt.Sprintf(format, args...)})
}

// CheckEvidence recomputes the evidence e (read from path) from src: the report's SHA-256,
// the roots of each digest, the roots of the recorded ranges read again on each cluster. A
// mismatch is a Check that is not OK; an error is a source that cannot be checked (a file
// that cannot be read, a digest or cluster of something else, a range no longer readable).
func CheckEvidence(ctx context.Context, e *Evidence, path string, src EvidenceSources) (*EvidenceCheck, error) {
	ec := &EvidenceCheck{CheckedFrom: map[string]string{}}
	if src.Report != "" {
		if err := checkReport(ec, e, src.Report); err != nil {
			return nil, err
		}
	}
	for _, dpath := range src.Digests {
		side, err := checkDigest(ec, e, dpath)
		if err != nil {
			return nil, err
		}
		ec.CheckedFrom[side] = "digest " + dpath
	}
	if len(src.Clusters) > 0 {
		fields, err := offsetmap.ParseFields(strings.Join(e.Compared, ","))
		if err != nil {
			return nil, fmt.Errorf("evidence %s: compared fields: %w", path, err)
		}
		for _, side := range []string{"source", "target"} {
			cl, ok := src.Clusters[side]
			if !ok {
				continue
			}
			if err := checkCluster(ctx, ec, e, cl.Client, side, fields); err != nil {
				return nil, err
			}
			ec.CheckedFrom[side] = cl.Name
		}
	}
	return ec, nil
}

// checkReport compares the SHA-256 of the report file with the evidence's.
func checkReport(ec *EvidenceCheck, e *Evidence, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	ec.add(sum == e.ReportSHA256, "report %s: SHA-256 %s, the evidence hashed %s: %s", path, sum, e.ReportHashed, e.ReportSHA256)
	return nil
}

// evidenceSide returns the recorded side and the partitions' ranges of it.
func evidenceSide(e *Evidence, side string) (EvidenceSide, func(EvidencePart) RangeRoot) {
	if side == "source" {
		return e.Source, func(p EvidencePart) RangeRoot { return p.Source }
	}
	return e.Target, func(p EvidencePart) RangeRoot { return p.Target }
}

// checkDigest compares the roots of a digest file with the evidence's; the digest must be of
// the recorded cluster, topic, fields and isolation, and cover each recorded range exactly.
func checkDigest(ec *EvidenceCheck, e *Evidence, path string) (string, error) {
	d, err := ReadFile(path)
	if err != nil {
		return "", err
	}
	es, rangeOf := evidenceSide(e, d.Side)
	switch {
	case d.ClusterID != es.ClusterID || d.Topic != es.Topic:
		return "", fmt.Errorf("--digest %s is of topic %q on cluster %q, the evidence's %s is topic %q on cluster %q", path, d.Topic, d.ClusterID, d.Side, es.Topic, es.ClusterID)
	case !slices.Equal(d.Compared, e.Compared) || d.Isolation != e.Isolation:
		return "", fmt.Errorf("--digest %s fingerprints %v read %s, the evidence %v read %s: take the digest with the same --compare and isolation", path, d.Compared, d.Isolation, e.Compared, e.Isolation)
	}
	for _, ep := range e.Partitions {
		want := rangeOf(ep)
		p, ok := d.Lookup(ep.Partition)
		if !ok || p.From != want.From || p.To != want.To {
			return "", fmt.Errorf("--digest %s does not cover %s partition %d [%d, %d) exactly: take it with kverify digest --side %s --ranges EVIDENCE", path, d.Side, ep.Partition, want.From, want.To, d.Side)
		}
		ec.add(p.Root == want.Root && p.Records == want.Records, "%s topic %q partition %d [%d, %d): %d records, root %s (digest %s); evidence: %d records, root %s",
			d.Side, d.Topic, ep.Partition, want.From, want.To, p.Records, p.Root, path, want.Records, want.Root)
	}
	return d.Side, nil
}

// checkCluster reads the recorded ranges of side again on cl, which must be the recorded
// cluster.
func checkCluster(ctx context.Context, ec *EvidenceCheck, e *Evidence, cl *kgo.Client, side string, fields offsetmap.Fields) error {
	es, rangeOf := evidenceSide(e, side)
	id, err := clustermeta.ID(ctx, cl, side)
	if err != nil {
		return err
	}
	if id != es.ClusterID {
		return fmt.Errorf("the %s cluster reached has ID %q, the evidence was taken of %q (%s): connect to that cluster", side, id, es.ClusterID, es.Cluster)
	}
	for _, ep := range e.Partitions {
		want := rangeOf(ep)
		got, err := ReadRoot(ctx, cl, Range{Cluster: side, Topic: es.Topic, Partition: ep.Partition, From: want.From, To: want.To, Fields: fields, Committed: e.Isolation == "read_committed"})
		if err != nil {
			return fmt.Errorf("cannot re-read the recorded range: %w", err)
		}
		ec.add(got.Root == want.Root && got.Records == want.Records, "%s topic %q partition %d [%d, %d): %d records, root %s; evidence: %d records, root %s",
			side, es.Topic, ep.Partition, want.From, want.To, got.Records, got.Root, want.Records, want.Root)
	}
	return nil
}
