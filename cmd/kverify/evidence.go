package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

// withEvidence renders the --evidence file of a diff run into its output (outs), when asked:
// per compared partition the range compared on each side and the root over its fingerprints
// (read again from both clusters after the diff), of the target read read_committed the
// records of aborted transactions in its range, the tool version, the cluster IDs, the time
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
	e, err := verify.Evidence(c.Context, conn.Src, conn.Dst, cfg, res, verify.EvidenceNames{
		SourceAlias: conn.Source.Alias, TargetAlias: conn.Target.Alias, Tool: "kverify " + clikit.VersionString()})
	if err != nil {
		return clikit.Failf("--evidence: %w (nothing written)", err)
	}
	// The target ranges were read read_committed: each records the aborted records it passed
	// over, which read_uncommitted consumers read on top of the proved ones.
	e.SumTargetAborted()
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
