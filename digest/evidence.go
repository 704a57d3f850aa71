package digest

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// EvidenceFormat and EvidenceVersion name an evidence file.
const (
	EvidenceFormat  = "kverify-evidence"
	EvidenceVersion = 1
)

// Evidence is what `kverify diff --evidence` writes for an auditor (doc.go shows it).
type Evidence struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	Tool        string         `json:"tool"`
	Created     time.Time      `json:"created"`
	Source      EvidenceSide   `json:"source"`
	Target      EvidenceSide   `json:"target"`
	Compared    []string       `json:"compared"`
	Isolation   string         `json:"isolation"`
	Fingerprint string         `json:"fingerprint"`
	RootHash    string         `json:"root_hash"`
	Identical   bool           `json:"identical"`
	Partitions  []EvidencePart `json:"partitions"`
	// ReportSHA256 is SHA-256 of ReportHashed: the bytes of the --out file, or the JSON
	// rendering of the result when the report went to standard output.
	ReportSHA256 string `json:"report_sha256"`
	ReportHashed string `json:"report_hashed"`
	// TargetAborted and TargetAbortedCopies are the sums of the partitions' target Aborted
	// and AbortedCopies (SumTargetAborted): what read_uncommitted consumers (the Java
	// default) read on top of the proved records, and how many of those are copies of them.
	// nil when not recorded.
	TargetAborted       *int64 `json:"target_aborted,omitempty"`
	TargetAbortedCopies *int64 `json:"target_aborted_copies,omitempty"`
}

// SumTargetAborted sets e.TargetAborted and e.TargetAbortedCopies to the sums over the
// partitions, when every partition's target recorded them (else leaves them nil).
func (e *Evidence) SumTargetAborted() {
	var n, copies int64
	for _, p := range e.Partitions {
		if p.Target.Aborted == nil || p.Target.AbortedCopies == nil {
			e.TargetAborted, e.TargetAbortedCopies = nil, nil
			return
		}
		n, copies = n+*p.Target.Aborted, copies+*p.Target.AbortedCopies
	}
	e.TargetAborted, e.TargetAbortedCopies = &n, &copies
}

// EvidenceSide names one cluster and topic.
type EvidenceSide struct {
	Cluster   string `json:"cluster"`
	ClusterID string `json:"cluster_id"`
	Topic     string `json:"topic"`
}

// EvidencePart is one compared partition: the range compared on each side and its root.
type EvidencePart struct {
	Partition int32     `json:"partition"`
	Source    RangeRoot `json:"source"`
	Target    RangeRoot `json:"target"`
}

// RangeRoot is a range [From, To), its record count and the root over its fingerprints. Of a
// target range read read_committed, Aborted and AbortedCopies also count the records of
// aborted transactions the read passed over and the copies of committed records among them
// (Txns): not part of the root, which is over the committed records only. nil when not
// recorded: the source, a read_uncommitted read, or evidence written by a kverify that did
// not record them.
type RangeRoot struct {
	From          int64  `json:"from"`
	To            int64  `json:"to"`
	Records       int64  `json:"records"`
	Root          string `json:"root"`
	Aborted       *int64 `json:"aborted,omitempty"`
	AbortedCopies *int64 `json:"aborted_copies,omitempty"`
}

// NewEvidence is an Evidence with the format and descriptions filled in.
func NewEvidence() *Evidence {
	return &Evidence{Format: EvidenceFormat, Version: EvidenceVersion, Fingerprint: FingerprintDesc, RootHash: RootHashDesc, Partitions: []EvidencePart{}}
}

// WriteEvidence encodes e, indented (an evidence file is small and read by people).
func WriteEvidence(w io.Writer, e *Evidence) error { return writeJSON(w, e, true) }

// ReadEvidence reads and checks an evidence file: one object of this format and version, no
// unknown field, nothing after it, each partition once, valid ranges and roots.
func ReadEvidence(path string) (*Evidence, error) { return readNamed(path, "evidence", parseEvidence) }

func parseEvidence(data []byte) (*Evidence, error) {
	var e Evidence
	if err := decodeOne(data, &e, "evidence"); err != nil {
		return nil, err
	}
	if e.Format != EvidenceFormat || e.Version != EvidenceVersion {
		return nil, fmt.Errorf("format %q version %d: this kverify reads %s version %d", e.Format, e.Version, EvidenceFormat, EvidenceVersion)
	}
	if e.Source.Topic == "" || e.Target.Topic == "" {
		return nil, errors.New("a topic is not named")
	}
	seen := map[int32]bool{}
	for _, p := range e.Partitions {
		if seen[p.Partition] || p.Partition < 0 {
			return nil, fmt.Errorf("partition %d listed twice or negative", p.Partition)
		}
		seen[p.Partition] = true
		for side, r := range map[string]RangeRoot{"source": p.Source, "target": p.Target} {
			if r.From < 0 || r.To < r.From || r.Records < 0 || r.Records > r.To-r.From {
				return nil, fmt.Errorf("partition %d %s: range [%d, %d) of %d records is not valid", p.Partition, side, r.From, r.To, r.Records)
			}
			if _, err := ParseRoot(r.Root); err != nil {
				return nil, fmt.Errorf("partition %d %s: %w", p.Partition, side, err)
			}
			if err := checkAborted(r.Aborted, r.AbortedCopies, r.To-r.From); err != nil {
				return nil, fmt.Errorf("partition %d %s: %w", p.Partition, side, err)
			}
		}
	}
	if err := checkAborted(e.TargetAborted, e.TargetAbortedCopies, -1); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return &e, nil
}

// checkAborted checks a recorded count of aborted records and of copies among them: both or
// neither, copies at most the count, the count at most max (-1: no bound).
func checkAborted(n, copies *int64, limit int64) error {
	switch {
	case n == nil && copies == nil:
		return nil
	case n == nil || copies == nil:
		return errors.New("aborted and aborted_copies go together")
	case *n < 0 || *copies < 0 || *copies > *n || limit >= 0 && *n > limit:
		return fmt.Errorf("%d aborted records, %d copies: not valid", *n, *copies)
	}
	return nil
}
