package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/atomicfile"
	"github.com/kmigrate/kmigrate/internal/backupfile"
)

// StateOffset is one entry of a Kafka Streams .checkpoint file: the offset of the last record
// of a changelog partition that the store holds (Kafka Streams restores from the next one).
type StateOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// StateEntry is an entry of a .checkpoint file and what it becomes on the target.
type StateEntry struct {
	StateOffset
	// Target is the entry on the target, E(Offset+1)-1: the store restored from the target
	// resumes at E(Offset+1), right after the copy of the last record it holds. Nil when the
	// entry is kept as it is (Kept says why) or when E is not known (Reason says why).
	Target *int64 `json:"target_offset,omitempty"`
	Kept   string `json:"kept,omitempty"`
	// Dropped: E(Offset+1) is 0, so the entry would be -1, which Kafka Streams does not take;
	// without the entry the store restores from the beginning, the same place.
	Dropped bool   `json:"dropped,omitempty"`
	Status  Status `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Proof   string `json:"proof,omitempty"`
}

// StateFile is one .checkpoint file of a state directory.
type StateFile struct {
	// Path is the file's path relative to the application's directory ("0_1/.checkpoint").
	Path    string       `json:"path"`
	Entries []StateEntry `json:"entries"`
}

// StatePlan is PlanStateDir's answer: every .checkpoint file of an application's state
// directory kept from the source, translated to the target.
type StatePlan struct {
	App string `json:"application_id"`
	// Dir is the application's directory: state.dir/<application.id>.
	Dir   string      `json:"dir"`
	Files []StateFile `json:"files"`
	// Ready: every entry of every file has its target offset and the application runs on
	// neither cluster; ApplyStateDir writes only then, and every file or none.
	Ready    bool     `json:"ready"`
	Problems []string `json:"problems,omitempty"`
	// Backup is the file ApplyStateDir saved the files to before rewriting them.
	Backup string `json:"backup,omitempty"`
	// Applied is true once every file was rewritten.
	Applied bool `json:"applied"`
}

// stateBackup is the backup of a state directory rewrite (backupfile kind State): each file
// as it was and as ApplyStateDir wrote it, so that RollbackStateDir restores only files the
// application did not write since.
type stateBackup struct {
	Kind  string            `json:"kind"`
	App   string            `json:"application_id"`
	Dir   string            `json:"dir"`
	Files []stateBackupFile `json:"files"`
}

type stateBackupFile struct {
	Path    string `json:"path"`
	Before  string `json:"before"`
	Written string `json:"written"`
}

// checkpointName is the name of Kafka Streams' checkpoint files (OffsetCheckpoint).
const checkpointName = ".checkpoint"

// AppStateDir is the directory of application app's state under dir: dir/<app> (dir is the
// application's state.dir), or dir itself when it is named after the application.
func AppStateDir(dir, app string) (string, error) {
	for _, d := range []string{filepath.Join(dir, app), dir} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && filepath.Base(d) == app {
			return d, nil
		}
	}
	return "", fmt.Errorf("no state directory of application %s in %s: give the application's state.dir (the directory that holds %s/)", app, dir, app)
}

// storesIn lists the persistent stores of the task directories under appDir (Kafka Streams
// keeps a RocksDB store in <task>/rocksdb/<store>), as task/store, sorted.
func storesIn(appDir string) []string {
	dirs, _ := filepath.Glob(filepath.Join(appDir, "*", "rocksdb", "*"))
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			rel, _ := filepath.Rel(appDir, d)
			task, _, _ := strings.Cut(rel, string(filepath.Separator))
			out = append(out, task+"/"+filepath.Base(d))
		}
	}
	slices.Sort(out)
	return out
}

// ReadStateDir reads every .checkpoint file under the application's directory appDir (task
// directories such as 0_1/, and global/), sorted by path.
func ReadStateDir(appDir string) ([]StateFile, error) {
	files := []StateFile{}
	err := filepath.WalkDir(appDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != checkpointName {
			return nil
		}
		rel, err := filepath.Rel(appDir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		offs, err := ParseCheckpoint(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		f := StateFile{Path: rel, Entries: []StateEntry{}}
		for _, o := range offs {
			f.Entries = append(f.Entries, StateEntry{StateOffset: o})
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read state directory %s: %w", appDir, err)
	}
	return files, nil
}

// ParseCheckpoint reads a .checkpoint file as Kafka Streams writes it (OffsetCheckpoint,
// version 0): the version, the number of entries, then one "topic partition offset" line each.
func ParseCheckpoint(data []byte) ([]StateOffset, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("not a Kafka Streams checkpoint file of version 0 (first line %q): kreconcile reads version 0 only", firstLine(lines))
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("checkpoint file says %q entries and holds %d lines of them", strings.TrimSpace(lines[1]), len(lines)-2)
	}
	out := make([]StateOffset, 0, n)
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("entry %d %q: want \"topic partition offset\"", i+1, l)
		}
		p, perr := strconv.ParseInt(f[1], 10, 32)
		o, oerr := strconv.ParseInt(f[2], 10, 64)
		if perr != nil || oerr != nil || p < 0 {
			return nil, fmt.Errorf("entry %d %q: partition and offset must be numbers", i+1, l)
		}
		out = append(out, StateOffset{Topic: f[0], Partition: int32(p), Offset: o})
	}
	return out, nil
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// FormatCheckpoint writes offsets as a version 0 .checkpoint file.
func FormatCheckpoint(offs []StateOffset) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(offs))
	for _, o := range offs {
		fmt.Fprintf(&b, "%s %d %d\n", o.Topic, o.Partition, o.Offset)
	}
	return b.Bytes()
}

// PlanStateDir translates the .checkpoint files of application app's state directory, kept
// from the source, to the target: each entry (the last changelog record a store holds, a
// source offset o) becomes E(o+1)-1, so that the store restored on the target resumes right
// after the copy of that record, with E(G) computed by Plan as for a group partition committed
// at o+1. Negative entries (Kafka Streams' "offset unknown") are kept. It writes nothing.
func PlanStateDir(ctx context.Context, src, dst *kgo.Client, cfg Config, dir, app string) (*StatePlan, error) {
	appDir, err := AppStateDir(dir, app)
	if err != nil {
		return nil, err
	}
	files, err := ReadStateDir(appDir)
	if err != nil {
		return nil, err
	}
	sp := &StatePlan{App: app, Dir: appDir, Files: files}
	if len(files) == 0 {
		if stores := storesIn(appDir); len(stores) > 0 {
			sp.Problems = append(sp.Problems, fmt.Sprintf("no %s file in %s, but its tasks hold %d persistent stores (%s): Kafka Streams 4.3 and later keep each store's changelog offsets inside the store (KIP-1035), where kreconcile cannot rewrite them; wipe the directory (or give a new state.dir) so that the stores restore from the target's changelogs, or keep it only where kreconcile groups shows no changelog ending lower on the target",
				checkpointName, appDir, len(stores), strings.Join(stores, ", ")))
			return sp, nil
		}
		sp.Problems = append(sp.Problems, fmt.Sprintf("no %s file in %s: nothing to rewrite (a store without one restores its whole changelog)", checkpointName, appDir))
		return sp, nil
	}
	var offs []StateOffset
	for _, f := range files {
		for _, e := range f.Entries {
			if e.Offset >= 0 && !slices.Contains(offs, e.StateOffset) {
				offs = append(offs, e.StateOffset)
			}
		}
	}
	cfg.Groups = regexp.MustCompile(regexp.QuoteMeta(app))
	cfg.GroupsExclude = nil
	cfg.StateOffsets = map[string][]StateOffset{app: offs}
	res, err := Plan(ctx, src, dst, cfg)
	if err != nil {
		return nil, err
	}
	var g *Group
	for i := range res.Groups {
		if res.Groups[i].Group == app {
			g = &res.Groups[i]
		}
	}
	switch {
	case g == nil:
		sp.Problems = append(sp.Problems, fmt.Sprintf("no group %s on the source (or the flow's groups leave it out): the application id is its group", app))
		return sp, nil
	case g.App == nil:
		sp.Problems = append(sp.Problems, fmt.Sprintf("group %s is not a Kafka Streams application on the source (no internal topic named after it)", app))
		return sp, nil
	}
	if s := g.SourceState; s != "Empty" && s != "Dead" && s != "" {
		sp.Problems = append(sp.Problems, fmt.Sprintf("the application runs on the source (group %s is %s): stop every instance first, so that its state directories stop changing", app, s))
	}
	if s := g.TargetState; s != "Empty" && s != "Dead" && s != "" {
		sp.Problems = append(sp.Problems, fmt.Sprintf("the application runs on the target (group %s is %s): rewrite a state directory before its instance starts there", app, s))
	}
	judged := map[StateOffset]Partition{}
	for _, part := range g.App.Checkpoints {
		judged[StateOffset{Topic: part.Topic, Partition: part.Partition, Offset: part.SourceCommitted - 1}] = part
	}
	for fi := range sp.Files {
		for ei := range sp.Files[fi].Entries {
			e := &sp.Files[fi].Entries[ei]
			if e.Offset < 0 {
				e.Kept = fmt.Sprintf("offset %d is Kafka Streams' own mark (unknown), not a position: written as it is", e.Offset)
				continue
			}
			part, ok := judged[e.StateOffset]
			if !ok {
				e.Reason = "not planned"
			} else {
				e.Status, e.Reason, e.Proof = part.Status, part.Reason, part.Proof
			}
			if !ok || part.ExactTarget == nil {
				sp.Problems = append(sp.Problems, fmt.Sprintf("%s: %s/%d offset %d: the target offset is not known (%s %s): the file cannot be rewritten; wipe the directory instead",
					sp.Files[fi].Path, e.Topic, e.Partition, e.Offset, e.Status, e.Reason))
				continue
			}
			if *part.ExactTarget == 0 {
				e.Dropped = true
				continue
			}
			t := *part.ExactTarget - 1
			e.Target = &t
		}
	}
	sp.Ready = len(sp.Problems) == 0
	return sp, nil
}

// written is what ApplyStateDir writes for f.
func (f StateFile) written() []byte {
	var offs []StateOffset
	for _, e := range f.Entries {
		switch {
		case e.Dropped:
		case e.Target != nil:
			offs = append(offs, StateOffset{Topic: e.Topic, Partition: e.Partition, Offset: *e.Target})
		default:
			offs = append(offs, e.StateOffset)
		}
	}
	return FormatCheckpoint(offs)
}

// ApplyStateDir rewrites the .checkpoint files of a ready plan, all of them or none: it saves
// each file as it is and as it will be to backup (which must not exist; mode 0600, written
// whole before any file changes), checks that no file changed since the plan read it, then
// replaces each one atomically. RollbackStateDir undoes it.
func ApplyStateDir(sp *StatePlan, backup string) error {
	if !sp.Ready {
		return fmt.Errorf("state directory %s is not ready to rewrite: %s", sp.Dir, strings.Join(sp.Problems, "; "))
	}
	b := stateBackup{Kind: backupfile.State, App: sp.App, Dir: sp.Dir}
	for _, f := range sp.Files {
		path := filepath.Join(sp.Dir, f.Path)
		before, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		offs, err := ParseCheckpoint(before)
		if err != nil || !sameEntries(offs, f.Entries) {
			return fmt.Errorf("%s changed since it was planned (is an instance running on this directory?): plan again", path)
		}
		b.Files = append(b.Files, stateBackupFile{Path: f.Path, Before: string(before), Written: string(f.written())})
	}
	if err := backupfile.Create(backup, b); err != nil {
		return err
	}
	sp.Backup = backup
	for _, f := range b.Files {
		if err := replaceFile(filepath.Join(sp.Dir, f.Path), f.Written); err != nil {
			return fmt.Errorf("%w (the files before it are rewritten; kreconcile rollback --backup %s restores them)", err, backup)
		}
	}
	sp.Applied = true
	return nil
}

func sameEntries(offs []StateOffset, entries []StateEntry) bool {
	if len(offs) != len(entries) {
		return false
	}
	for i, o := range offs {
		if entries[i].StateOffset != o {
			return false
		}
	}
	return true
}

func replaceFile(path, content string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	defer f.Discard()
	if _, err := f.Write([]byte(content)); err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	if err := f.Replace(); err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(path); err != nil {
		return fmt.Errorf("rewrite %s: sync directory: %w", path, err)
	}
	return nil
}

// StateRollback is what RollbackStateDir did.
type StateRollback struct {
	Dir      string   `json:"dir"`
	Restored []string `json:"restored"`
	// Unchanged are files already as they were before the rewrite.
	Unchanged []string `json:"unchanged,omitempty"`
}

// ErrStateMoved is returned by RollbackStateDir when a file is no longer what the rewrite
// wrote: the application has run on the directory since.
var ErrStateMoved = errors.New("a checkpoint file changed since the rewrite")

// RollbackStateDir restores the .checkpoint files a rewrite changed, from its backup. It
// writes nothing when a file is neither what the rewrite wrote nor what it replaced (the
// application has run on the directory since, and its checkpoints name target offsets now:
// restoring source offsets would erase that), and says which.
func RollbackStateDir(backup string) (*StateRollback, error) {
	var b stateBackup
	if err := backupfile.Decode(backup, &b, true, "state directory backup", "kreconcile state --apply"); err != nil {
		return nil, err
	}
	if b.Kind != backupfile.State || b.Dir == "" || b.App == "" {
		return nil, fmt.Errorf("%s is not a state directory backup of kreconcile state --apply", backup)
	}
	rb := &StateRollback{Dir: b.Dir, Restored: []string{}}
	var moved []string
	var todo []stateBackupFile
	for _, f := range b.Files {
		if filepath.IsAbs(f.Path) || strings.HasPrefix(filepath.Clean(f.Path), "..") {
			return nil, fmt.Errorf("backup %s: path %q is outside the application's directory", backup, f.Path)
		}
		path := filepath.Join(b.Dir, f.Path)
		now, err := os.ReadFile(path)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("read %s: %w", path, err)
		case err == nil && string(now) == f.Before:
			rb.Unchanged = append(rb.Unchanged, f.Path)
		case err == nil && string(now) == f.Written:
			todo = append(todo, f)
		default:
			moved = append(moved, f.Path)
		}
	}
	if len(moved) > 0 {
		return rb, fmt.Errorf("%w: %s in %s (the application has run on it since, or removed them): nothing restored", ErrStateMoved, strings.Join(moved, ", "), b.Dir)
	}
	for _, f := range todo {
		if err := replaceFile(filepath.Join(b.Dir, f.Path), f.Before); err != nil {
			return rb, err
		}
		rb.Restored = append(rb.Restored, f.Path)
	}
	return rb, nil
}
