package reconcile

import (
	"regexp"
	"testing"
)

// TestPlanGroupAtSourceEndAfterMarker: a group committed past a transaction marker at the
// source end (no record at or after G) still gets E(G) from the offset map's ExactTarget:
// the source range the alignment covers reaches G.
func TestPlanGroupAtSourceEndAfterMarker(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("marker-end")
	group := "g-" + topic
	createTopic(t, e.srcAdm, topic, 1)
	createTopic(t, e.dstAdm, topic, 1)
	produceTxn(t, e.src, topic, 0, values("v", 0, 10)...) // offsets 0..9, commit marker at 10
	mirrorTopic(t, e, topic, topic, 0, step{0, 11})       // target offsets 0..9
	commit(t, e.srcAdm, group, topic, 0, 11, "")
	commit(t, e.dstAdm, group, topic, 0, 10, "")
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusExact || fmtPtr(p.ExactTarget) != "10" {
		t.Fatalf("got %s E=%s (%s), want exact E=10", p.Status, fmtPtr(p.ExactTarget), p.Reason)
	}
}
