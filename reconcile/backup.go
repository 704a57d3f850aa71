package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kmigrate/kmigrate/internal/backupfile"
)

// BackupVersion is the format version of the backup files Apply writes. Version 2 records the
// clusters (alias and cluster ID) and, per partition, the offset Apply committed. Version 1
// files (written by an earlier kreconcile) record neither: Rollback reads them only when told
// the cluster ID (RollbackConfig.LegacyClusterID).
const BackupVersion = 2

const legacyBackupVersion = 1

// Backup is what Apply saves before writing and Rollback restores: the target offsets of every
// group partition Apply was about to change, as they were, and what it was about to write.
type Backup struct {
	// Kind is empty in the files Apply writes (and "groups" is read as the same); a file of
	// another kind (an ACL backup, backupfile.ACLs) is refused by ReadBackup.
	Kind    string    `json:"kind,omitempty"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// SourceCluster and TargetCluster are the clusters of the plan; Rollback writes only to a
	// cluster whose ID is TargetCluster.ID.
	SourceCluster ClusterRef    `json:"source_cluster"`
	TargetCluster ClusterRef    `json:"target_cluster"`
	Entries       []BackupEntry `json:"entries"`
	// Applications are the groups Apply committed as Kafka Streams applications, every
	// partition at once: Rollback restores such a group wholly or not at all (absent in files
	// of earlier kreconciles: every group is then restored partition by partition).
	Applications []string `json:"applications,omitempty"`
}

// BackupEntry is one group partition's previous target commit. MarshalJSON and UnmarshalJSON
// give its form in the file (backupEntryJSON), hence no tags here.
type BackupEntry struct {
	Group     string
	Topic     string
	Partition int32
	// Offset is the commit before Apply, nil ("none" in the file) when the group had none
	// there: Rollback then deletes the commit Apply made.
	Offset *int64
	// Committed is the offset Apply committed (nil only in version 1 files): Rollback restores
	// a partition only while the target commit is still that one.
	Committed *int64
	// Metadata is the previous commit's metadata, committed again by Rollback.
	Metadata string
}

type backupEntryJSON struct {
	Group     string          `json:"group"`
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    json.RawMessage `json:"offset"`
	Committed *int64          `json:"committed,omitempty"`
	Metadata  string          `json:"metadata"`
}

// MarshalJSON writes Offset as a number, or the string "none".
func (e BackupEntry) MarshalJSON() ([]byte, error) {
	off := json.RawMessage(`"none"`)
	if e.Offset != nil {
		off = json.RawMessage(fmt.Sprint(*e.Offset))
	}
	return json.Marshal(backupEntryJSON{e.Group, e.Topic, e.Partition, off, e.Committed, e.Metadata})
}

// UnmarshalJSON reads what MarshalJSON writes and refuses negative offsets.
func (e *BackupEntry) UnmarshalJSON(b []byte) error {
	var j backupEntryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = BackupEntry{Group: j.Group, Topic: j.Topic, Partition: j.Partition, Committed: j.Committed, Metadata: j.Metadata}
	if j.Committed != nil && *j.Committed < 0 {
		return fmt.Errorf("group %q %s/%d: committed offset %d is negative", j.Group, j.Topic, j.Partition, *j.Committed)
	}
	if len(j.Offset) == 0 {
		return fmt.Errorf("group %q %s/%d: no offset: want a number or \"none\"", j.Group, j.Topic, j.Partition)
	}
	var s string
	if json.Unmarshal(j.Offset, &s) == nil {
		if s != "none" {
			return fmt.Errorf("group %q %s/%d: offset %q: want a number or \"none\"", j.Group, j.Topic, j.Partition, s)
		}
		return nil
	}
	var n int64
	if err := json.Unmarshal(j.Offset, &n); err != nil {
		return fmt.Errorf("group %q %s/%d: offset: %w", j.Group, j.Topic, j.Partition, err)
	}
	if n < 0 {
		return fmt.Errorf("group %q %s/%d: offset %d is negative: want a number >= 0 or \"none\"", j.Group, j.Topic, j.Partition, n)
	}
	e.Offset = &n
	return nil
}

// DefaultBackupName is the backup file Apply writes when ApplyConfig.Backup is empty.
func DefaultBackupName(now time.Time) string {
	return "kreconcile-backup-" + now.UTC().Format("20060102T150405Z") + ".json"
}

// ReadBackup reads and validates a backup file written by Apply (version 2, or version 1 of
// the previous kreconcile). It refuses anything else: unknown versions, bytes after the JSON
// value, empty group or topic names, negative partitions or offsets, a partition listed twice,
// and version 2 files without cluster IDs or committed offsets.
func ReadBackup(path string) (*Backup, error) {
	var b Backup
	if err := backupfile.Decode(path, &b, false, "backup", "kreconcile groups --apply"); err != nil {
		return nil, err
	}
	if err := b.validate(); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	return &b, nil
}

func (b *Backup) validate() error {
	if b.Kind == backupfile.ACLs {
		return errors.New("it is an ACL backup (kreconcile acls --apply), not a backup of consumer group offsets: kreconcile rollback reads both kinds")
	}
	if b.Kind != "" && b.Kind != backupfile.Groups {
		return fmt.Errorf("it holds %q, not consumer group offsets", b.Kind)
	}
	if b.Version != BackupVersion && b.Version != legacyBackupVersion {
		return fmt.Errorf("version %d: this kreconcile reads versions %d and %d", b.Version, legacyBackupVersion, BackupVersion)
	}
	if b.Version == BackupVersion {
		if b.TargetCluster.ID == "" {
			return errors.New("it names no target cluster ID: it was not written by kreconcile groups --apply")
		}
		if b.SourceCluster.ID == "" {
			return errors.New("it names no source cluster ID: it was not written by kreconcile groups --apply")
		}
	}
	type key struct {
		g, t string
		p    int32
	}
	seen := map[key]bool{}
	var errs []error
	for i, e := range b.Entries {
		switch {
		case e.Group == "":
			errs = append(errs, fmt.Errorf("entry %d: empty group name", i))
		case e.Topic == "":
			errs = append(errs, fmt.Errorf("entry %d (group %q): empty topic name", i, e.Group))
		case e.Partition < 0:
			errs = append(errs, fmt.Errorf("entry %d (group %q %s): partition %d", i, e.Group, e.Topic, e.Partition))
		case b.Version == BackupVersion && e.Committed == nil:
			errs = append(errs, fmt.Errorf("entry %d (group %q %s/%d): no committed offset (what apply wrote)", i, e.Group, e.Topic, e.Partition))
		case seen[key{e.Group, e.Topic, e.Partition}]:
			errs = append(errs, fmt.Errorf("entry %d: group %q %s/%d is listed twice", i, e.Group, e.Topic, e.Partition))
		}
		seen[key{e.Group, e.Topic, e.Partition}] = true
	}
	return errors.Join(errs...)
}

// The helpers of internal/backupfile under the names Plan, Apply, Follow and Rollback call them
// by: the ID of a client's cluster, refusing a cluster that reports none; writing a backup
// never over a file; rewriting the backup of Follow whole.
var (
	clusterID     = backupfile.ClusterID
	writeBackup   = backupfile.Create
	replaceBackup = backupfile.Replace
)
