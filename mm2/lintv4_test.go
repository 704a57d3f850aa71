package mm2

import (
	"strings"
	"testing"
)

// TestLintV4 covers the keys that differ between MirrorMaker 2 3.7.1 and 4.x.
func TestLintV4(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		extra    string // appended to clean (line 12 on)
		wantKey  string
		wantLine int
		wantSev  Severity
		wantMsg  string
		wantSugg string
	}{
		{name: "KIP-1031 key", extra: "emit.offset-syncs.enabled=true", wantKey: "emit.offset-syncs.enabled", wantLine: 12, wantSev: SeverityInfo, wantMsg: "4.x only (KIP-1031"},
		{name: "KIP-1089 key in a flow", extra: "src->dst.heartbeats.replication.enabled=false", wantKey: "src->dst.heartbeats.replication.enabled", wantLine: 12, wantSev: SeverityInfo, wantMsg: "3.7.1 ignores it"},
		{name: "metric names", extra: "metric.names.formats=new", wantKey: "metric.names.formats", wantLine: 12, wantSev: SeverityInfo, wantMsg: "4.x only"},
		{name: "blacklist removed", extra: "topics.blacklist=tmp.*", wantKey: "topics.blacklist", wantLine: 12, wantSev: SeverityWarning, wantMsg: "4.x no longer reads it", wantSugg: "topics.exclude"},
		{name: "flow blacklist removed", extra: "src->dst.groups.blacklist=tmp.*", wantKey: "src->dst.groups.blacklist", wantLine: 12, wantSev: SeverityWarning, wantMsg: "write src->dst.groups.exclude instead", wantSugg: "src->dst.groups.exclude"},
		{name: "config blacklist removed", extra: "config.properties.blacklist=segment\\\\.bytes", wantKey: "config.properties.blacklist", wantLine: 12, wantSev: SeverityWarning, wantMsg: "no longer reads", wantSugg: "config.properties.exclude"},
		{name: "incremental alter configs removed", extra: "use.incremental.alter.configs=requested", wantKey: "use.incremental.alter.configs", wantLine: 12, wantSev: SeverityWarning, wantMsg: "remove it"},
		{name: "source alias in metrics removed", extra: "add.source.alias.to.metrics=true", wantKey: "add.source.alias.to.metrics", wantLine: 12, wantSev: SeverityWarning, wantMsg: "remove it"},
		{name: "JMX reporter switch removed", extra: "auto.include.jmx.reporter=true", wantKey: "auto.include.jmx.reporter", wantLine: 12, wantSev: SeverityWarning, wantMsg: "no longer reads", wantSugg: "metric.reporters=org.apache.kafka.common.metrics.JmxReporter"},
		{name: "no offset syncs but checkpoints", extra: "src->dst.emit.offset-syncs.enabled=false", wantKey: "src->dst.emit.offset-syncs.enabled", wantLine: 12, wantSev: SeverityWarning, wantMsg: "emits no checkpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Lint(strings.NewReader(clean + tt.extra + "\n"))
			if err != nil {
				t.Fatalf("Lint: %v", err)
			}
			for _, f := range got {
				if f.Severity == SeverityError {
					t.Errorf("an error for a key MM2 4.x or 3.7.1 reads: %+v", f)
				}
				if f.Key == tt.wantKey && f.Line == tt.wantLine && f.Severity == tt.wantSev && strings.Contains(f.Message, tt.wantMsg) && f.Suggestion == tt.wantSugg {
					return
				}
			}
			t.Fatalf("findings: got %+v; want one with key %q line %d severity %s message containing %q suggestion %q",
				got, tt.wantKey, tt.wantLine, tt.wantSev, tt.wantMsg, tt.wantSugg)
		})
	}
}

// TestLintV4OffsetSyncsOff: emit.offset-syncs.enabled=false is fine when the flow neither
// checkpoints nor syncs group offsets.
func TestLintV4OffsetSyncsOff(t *testing.T) {
	t.Parallel()
	got, err := Lint(strings.NewReader(clean + "emit.offset-syncs.enabled=false\nemit.checkpoints.enabled=false\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.Severity != SeverityInfo {
			t.Errorf("finding: %+v, want only the 4.x-only note", f)
		}
	}
}
