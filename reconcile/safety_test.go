package reconcile

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// An offset map file never answers: content does, and the proof says whether the map agrees
// or why it does not count (kverify's map is an alignment by content itself).
func TestPlanOffsetMapCoverage(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("mapcov")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 2, nil)
	testkit.CreateTopic(t, e.dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, e.src, topic, p, values("v", 0, 100)...)
	}
	// p0: source 0..49 at 0..49, a replay of 45..49 at 50..54, 50..99 at 55..104: E(70) = 75.
	// p1: identity: E(70) = 70.
	mirrorTopic(t, e, topic, topic, 0, step{0, 50}, step{45, 100})
	mirrorTopic(t, e, topic, topic, 1, step{0, 100})
	testkit.Commit(t, e.srcAdm, group, topic, 0, 70, "")
	testkit.Commit(t, e.srcAdm, group, topic, 1, 70, "")
	testkit.Commit(t, e.dstAdm, group, topic, 0, 51, "")
	exactP0 := &offsetmap.PartitionMap{Partition: 0, SourceFrom: 0, SourceTo: 100, TargetTo: 105,
		Segments:   []offsetmap.Segment{{Source: 0, Target: 0, Len: 50}, {Source: 50, Target: 55, Len: 50}},
		Duplicates: []offsetmap.Copy{{Target: 50, Source: 45}, {Target: 51, Source: 46}, {Target: 52, Source: 47}, {Target: 53, Source: 48}, {Target: 54, Source: 49}},
	}
	mapOf := func(pms ...*offsetmap.PartitionMap) *offsetmap.TopicMap {
		return &offsetmap.TopicMap{Version: offsetmap.Version, SourceTopic: topic, TargetTopic: topic, Partitions: pms}
	}
	tests := []struct {
		name string
		om   *offsetmap.TopicMap
		part int32
		// wantAgrees: the proof must say the map agrees; otherwise why it was not used.
		wantAgrees bool
		wantStatus Status
		wantE      int64
	}{
		{name: "exact map", om: mapOf(exactP0), part: 0, wantAgrees: true, wantStatus: StatusBehind, wantE: 75},
		{name: "map without the group's partition (kverify --partitions 0)", om: mapOf(exactP0), part: 1,
			wantStatus: StatusMissingTargetOffset, wantE: 70},
		{name: "map from kverify --from above G", part: 0, wantStatus: StatusBehind, wantE: 75,
			om: mapOf(&offsetmap.PartitionMap{Partition: 0, SourceFrom: 80, SourceTo: 100, TargetTo: 105, Segments: []offsetmap.Segment{{Source: 80, Target: 85, Len: 20}}})},
		{name: "crafted: nothing mirrored below G", part: 0, wantStatus: StatusBehind, wantE: 75,
			om: mapOf(&offsetmap.PartitionMap{Partition: 0, SourceFrom: 0, SourceTo: 100, TargetTo: 105, Segments: []offsetmap.Segment{{Source: 90, Target: 95, Len: 10}}})},
		{name: "crafted: no segment, target end far above the real one", part: 0, wantStatus: StatusBehind, wantE: 75,
			om: mapOf(&offsetmap.PartitionMap{Partition: 0, SourceFrom: 0, SourceTo: 100, TargetTo: 1000})},
		{name: "crafted: the copy of s* past the target end", part: 0, wantStatus: StatusBehind, wantE: 75,
			om: mapOf(&offsetmap.PartitionMap{Partition: 0, SourceFrom: 0, SourceTo: 100, TargetTo: 200, Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 50}, {Source: 50, Target: 150, Len: 50}}})},
		{name: "map that disagrees with content", part: 0, wantStatus: StatusBehind, wantE: 75,
			om: mapOf(&offsetmap.PartitionMap{Partition: 0, SourceTo: 100, TargetTo: 100, Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 100}}})},
		{name: "map short of G", part: 0, wantStatus: StatusBehind, wantE: 75,
			om: mapOf(&offsetmap.PartitionMap{Partition: 0, SourceTo: 40, TargetTo: 40, Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 40}}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group)), OffsetMap: tc.om})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			p := findPartition(t, res, group, topic, tc.part)
			if p.Status != tc.wantStatus || fmtPtr(p.ExactTarget) != fmtPtr(&tc.wantE) {
				t.Fatalf("got %s E=%s (reason %q, proof %q), want %s E=%d", p.Status, fmtPtr(p.ExactTarget), p.Reason, p.Proof, tc.wantStatus, tc.wantE)
			}
			if p.ProofSource != SourceContent {
				t.Errorf("proof source %q, want %q: a map file is checked, never the answer", p.ProofSource, SourceContent)
			}
			if agrees := strings.HasSuffix(p.Proof, "the offset map agrees"); agrees != tc.wantAgrees {
				t.Errorf("proof %q: says the map agrees %v, want %v", p.Proof, agrees, tc.wantAgrees)
			}
			if !tc.wantAgrees && !strings.Contains(p.Proof, "offset map not used") {
				t.Errorf("proof %q: want it to say why the offset map was not used", p.Proof)
			}
		})
	}
}

// A map written before the mirror replayed s* again answers below E(G); the
// records the map never saw decide.
func TestPlanOffsetMapStale(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("mapstale")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 100)...)
	mirrorTopic(t, e, topic, topic, 0, step{0, 100})
	om := &offsetmap.TopicMap{Version: offsetmap.Version, SourceTopic: topic, TargetTopic: topic, Partitions: []*offsetmap.PartitionMap{{
		Partition: 0, SourceFrom: 0, SourceTo: 100, TargetTo: 100, Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 100}}}}}
	// After the map: a restarted mirror replays 65..74 at 100..109, so E(70) = 1 + 104.
	mirrorTopic(t, e, topic, topic, 0, step{65, 75})
	testkit.Commit(t, e.srcAdm, group, topic, 0, 70, "")
	testkit.Commit(t, e.dstAdm, group, topic, 0, 70, "")
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group)), OffsetMap: om})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusBehind || fmtPtr(p.ExactTarget) != "105" {
		t.Fatalf("got %s E=%s (reason %q, proof %q), want behind E=105", p.Status, fmtPtr(p.ExactTarget), p.Reason, p.Proof)
	}
}

// A backup restores only on the cluster it was taken on.
func TestRollbackRefusesOtherCluster(t *testing.T) {
	a := newApplyEnv(t)
	group := "other-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "src")
	testkit.Commit(t, a.srcAdm, group, a.topic, 1, 25, "src")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "old")
	res := a.plan(t, group)
	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	b, err := ReadBackup(backup)
	if err != nil {
		t.Fatalf("ReadBackup: %v", err)
	}
	if b.SourceCluster.ID != "kfake-source" || b.TargetCluster.ID != "kfake-target" {
		t.Errorf("backup clusters: got source %+v target %+v, want the IDs kfake-source and kfake-target", b.SourceCluster, b.TargetCluster)
	}

	// --target-brokers pointing at the source.
	rb, err := Rollback(testCtx(t), a.src, backup, RollbackConfig{})
	if err == nil || rb != nil {
		t.Fatalf("rollback on the source: got %+v, %v; want a refusal and no result", rb, err)
	}
	for _, want := range []string{"source cluster", "kfake-source", "kfake-target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q: want it to contain %q", err, want)
		}
	}
	for _, c := range []struct {
		part int32
		want int64
	}{{0, 30}, {1, 25}} {
		if at, meta, ok := testkit.Committed(t, a.srcAdm, group, a.topic, c.part); !ok || at != c.want || meta != "src" {
			t.Errorf("source commit p%d after the refused rollback: got %d %q (exists %v), want %d (untouched)", c.part, at, meta, ok, c.want)
		}
	}
	// On the target it restores.
	if _, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{}); err != nil {
		t.Fatalf("rollback on the target: %v", err)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 {
		t.Errorf("target commit p0 after rollback: got %d, want 21", at)
	}
}

// A backup of the previous version names no cluster: refused unless the user
// vouches for the cluster by its ID.
func TestRollbackLegacyBackup(t *testing.T) {
	a := newApplyEnv(t)
	group := "legacy-" + a.topic
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 35, "applied")
	path := filepath.Join(t.TempDir(), "v1.json")
	v1 := `{"version": 1, "created": "2026-01-01T00:00:00Z", "entries": [{"group": "` + group + `", "topic": "` + a.topic + `", "partition": 0, "offset": 21, "metadata": "old"}]}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cfg       RollbackConfig
		wantErr   string
		wantAfter int64
	}{
		{name: "without the cluster ID", wantErr: "--legacy-cluster-id kfake-target", wantAfter: 35},
		{name: "with another cluster's ID", cfg: RollbackConfig{LegacyClusterID: "kfake-source"}, wantErr: "kfake-source", wantAfter: 35},
		{name: "with the target's ID but the group moved since (no record of what apply wrote)", cfg: RollbackConfig{LegacyClusterID: "kfake-target"}, wantAfter: 35},
		{name: "with the target's ID and --force", cfg: RollbackConfig{LegacyClusterID: "kfake-target", Force: true}, wantAfter: 21},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rollback(testCtx(t), a.dst, path, tc.cfg)
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error: got %v, want one containing %q", err, tc.wantErr)
			}
			if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != tc.wantAfter {
				t.Errorf("target commit: got %d, want %d", at, tc.wantAfter)
			}
		})
	}
}

// Rollback does not erase what the group consumed on the target after apply.
func TestRollbackKeepsProgress(t *testing.T) {
	a := newApplyEnv(t)
	group := "progress-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.srcAdm, group, a.topic, 1, 25, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "old")
	testkit.Commit(t, a.dstAdm, group, a.topic, 1, 20, "old")
	res := a.plan(t, group)
	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	// The group consumed p0 on the target: 35 -> 38. p1 stays where apply put it.
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 38, "consumed")

	rb, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{})
	if err == nil {
		t.Errorf("rollback: got no error, want one naming %s/0", a.topic)
	}
	if at, meta, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 38 || meta != "consumed" {
		t.Errorf("p0 after rollback: got %d %q, want 38 consumed (progress kept)", at, meta)
	}
	if at, meta, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 1); at != 20 || meta != "old" {
		t.Errorf("p1 after rollback: got %d %q, want 20 old (restored)", at, meta)
	}
	if rb == nil || len(rb.Groups) != 1 || len(rb.Groups[0].Conflicts) != 1 || rb.Groups[0].Restored != 1 {
		t.Fatalf("rollback result: got %+v, want 1 restored and 1 conflict", rb)
	}
	c := rb.Groups[0].Conflicts[0]
	if c.Topic != a.topic || c.Partition != 0 || fmtPtr(c.Now) != "38" || fmtPtr(c.Applied) != "35" {
		t.Errorf("conflict: got %+v, want %s/0 now 38, applied 35", c, a.topic)
	}
	if !strings.Contains(err.Error(), a.topic+"/0") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("error %q: want it to name %s/0 and --force", err, a.topic)
	}

	// --force restores it anyway.
	if _, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{Force: true}); err != nil {
		t.Fatalf("rollback --force: %v", err)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 {
		t.Errorf("p0 after rollback --force: got %d, want 21", at)
	}
}

// Malformed backups are refused before anything is written.
func TestReadBackupRefuses(t *testing.T) {
	head := `{"version": ` + fmt.Sprint(BackupVersion) + `, "created": "2026-01-01T00:00:00Z", "source_cluster": {"alias": "source", "id": "S"}, "target_cluster": {"alias": "target", "id": "T"}, "entries": [`
	entry := func(group, offset string) string {
		return `{"group": "` + group + `", "topic": "t", "partition": 0, "offset": ` + offset + `, "committed": 5, "metadata": ""}`
	}
	tests := []struct {
		name, text, wantErr string
	}{
		{"negative offset", head + entry("g", "-3") + `]}`, "negative"},
		{"empty group name", head + entry("", "1") + `]}`, "empty group"},
		{"unknown version", `{"version": 7, "entries": []}`, "version 7"},
		{"trailing bytes", head + entry("g", "1") + `]}` + "\n{\"version\": 2}", "after the JSON"},
		{"trailing garbage", head + entry("g", "1") + `]}xyz`, "after the JSON"},
		{"offset neither number nor none", head + entry("g", `"latest"`) + `]}`, `"none"`},
		{"empty topic", head + `{"group": "g", "topic": "", "partition": 0, "offset": 1, "committed": 5}]}`, "empty topic"},
		{"negative partition", head + `{"group": "g", "topic": "t", "partition": -1, "offset": 1, "committed": 5}]}`, "partition -1"},
		{"the same partition twice", head + entry("g", "1") + `,` + entry("g", "2") + `]}`, "twice"},
		{"no target cluster ID", `{"version": 2, "source_cluster": {"id": "S"}, "entries": [` + entry("g", "1") + `]}`, "target cluster"},
		{"no committed offset", head + `{"group": "g", "topic": "t", "partition": 0, "offset": 1}]}`, "committed"},
		{"an ACL backup", `{"kind": "acls", "version": 1, "source_cluster": {"alias": "source", "id": "S"}, "target_cluster": {"alias": "target", "id": "T"}, "acls_created": [], "acls_deleted": []}`, "ACL backup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.json")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadBackup(path)
			// The path names the test: look at the message without it.
			if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), path, "FILE"), tc.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// The backup file is complete, private and durable before any commit.
func TestWriteBackupFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.json")
	b := &Backup{Version: BackupVersion, SourceCluster: ClusterRef{Alias: "s", ID: "S"}, TargetCluster: ClusterRef{Alias: "t", ID: "T"},
		Entries: []BackupEntry{{Group: "g", Topic: "t", Partition: 1, Offset: ptr(7), Committed: ptr(9), Metadata: "m"}}}
	if err := writeBackup(path, b); err != nil {
		t.Fatalf("writeBackup: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode: got %v, want 0600", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory: got %v, want only b.json (no temporary file left)", names)
	}
	if _, err := ReadBackup(path); err != nil {
		t.Errorf("ReadBackup of what writeBackup wrote: %v", err)
	}
	if err := writeBackup(path, b); err == nil {
		t.Errorf("writing over an existing backup: got no error, want one")
	}
	// A backup that cannot be written stops Apply before any commit.
	a := newApplyEnv(t)
	group := "nobackup-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "")
	res := a.plan(t, group)
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(dir, "missing-dir", "b.json")}); err == nil {
		t.Errorf("Apply with an unwritable backup: got no error")
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 {
		t.Errorf("target commit: got %d, want 21 (nothing written without a backup)", at)
	}
}

// A commit that fails for some partitions of a group is reported as it is.
func TestApplyPartialFailure(t *testing.T) {
	a := newApplyEnv(t)
	group := "partial-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.srcAdm, group, a.topic, 1, 25, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 1, 20, "")
	res := a.plan(t, group)
	h := a.dstK.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Topic: a.topic, Partitions: []int32{1}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer h.Remove()
	err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")})
	if err == nil || !strings.Contains(err.Error(), a.topic+"/1") || strings.Contains(err.Error(), a.topic+"/0:") {
		t.Errorf("error: got %v, want one naming %s/1 (and not 0)", err, a.topic)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 35 {
		t.Fatalf("p0: got %d, want 35 committed", at)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 1); at != 20 {
		t.Fatalf("p1: got %d, want 20 (the commit failed)", at)
	}
	if !res.Applied || !findGroup(t, res, group).Applied {
		t.Errorf("applied: got result %v group %v, want true: p0 was written", res.Applied, findGroup(t, res, group).Applied)
	}
	p0, p1 := findPartition(t, res, group, a.topic, 0), findPartition(t, res, group, a.topic, 1)
	if !p0.Applied || p0.Status != StatusExact || !strings.HasPrefix(p0.Action, "committed 35") {
		t.Errorf("p0: got applied=%v %s %q, want applied, exact, committed 35", p0.Applied, p0.Status, p0.Action)
	}
	if p1.Applied || p1.Status != StatusBehind || !strings.Contains(p1.ApplyError, "TOPIC_AUTHORIZATION_FAILED") || fmtPtr(p1.TargetCommitted) != "20" {
		t.Errorf("p1: got applied=%v %s target=%s error %q, want not applied, behind at 20, the broker's error", p1.Applied, p1.Status, fmtPtr(p1.TargetCommitted), p1.ApplyError)
	}
}

// The broker refusing the commit because a member joined after the check.
func TestApplyConsumerJoinedBetween(t *testing.T) {
	tests := []struct {
		name string
		// join makes a member join between the check and the commit; fault instead makes the
		// broker answer as it does then.
		join  bool
		fault *kerr.Error
	}{
		{name: "broker answers UNKNOWN_MEMBER_ID", fault: kerr.UnknownMemberID},
		{name: "broker answers ILLEGAL_GENERATION", fault: kerr.IllegalGeneration},
		{name: "a consumer really joins", join: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplyEnv(t)
			group := "late-" + a.topic
			testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
			testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "")
			res := a.plan(t, group)
			cfg := ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}
			if tc.fault != nil {
				h := a.dstK.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: tc.fault, Count: -1})
				defer h.Remove()
			}
			if tc.join {
				cfg.BeforeCommit = func(g string) { testkit.JoinGroup(t, a.dst, g, a.topic) }
			}
			err := Apply(testCtx(t), a.dst, res, cfg)
			if err == nil || !strings.Contains(err.Error(), "joined") || !strings.Contains(err.Error(), group) {
				t.Errorf("error: got %v, want one saying a consumer of %s joined", err, group)
			}
			if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 {
				t.Errorf("target commit: got %d, want 21 (nothing written)", at)
			}
			if res.Applied {
				t.Errorf("applied: got true, want false")
			}
		})
	}
}
