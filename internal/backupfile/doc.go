// Package backupfile is what kreconcile's backup files share, whatever they hold (consumer
// group offsets, written by reconcile; ACLs, written by aclsync): the clusters a backup names
// and how a client's cluster is identified, the kind of a file, reading one exactly, writing
// one whole or not at all, and refusing to undo a backup on a cluster it was not taken on.
//
// The types to know:
//
//   - ClusterRef names a cluster by its alias and the cluster ID its brokers report; ClusterID
//     reads that ID and refuses a cluster that reports none (it could not be told from
//     another), and Connected does so for the cluster a rollback writes to.
//   - Kind reads the "kind" key of a file: Groups (also a file without the key, as every
//     earlier kreconcile wrote) or ACLs; any other kind is an error.
//   - Decode reads a file as exactly one JSON value (optionally refusing unknown fields) and
//     nothing after it; its errors call the file by what it holds and name the command that
//     writes it.
//   - Create writes a backup to a path that must not exist, and Replace over one that does,
//     both through internal/atomicfile: a temporary file in the same directory, mode 0600,
//     fsynced, then linked (never over a file) or renamed into place, and the directory
//     fsynced. The path holds nothing, the old backup, or the whole new one.
//   - CheckTarget refuses a backup whose target cluster ID is not the connected cluster's,
//     naming the source cluster when that is the one connected.
//
// It imports internal/atomicfile and internal/clustermeta only, so that reconcile and aclsync
// both import it and neither imports the other.
package backupfile
