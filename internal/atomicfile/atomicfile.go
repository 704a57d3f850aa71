// Package atomicfile writes a file so that its path holds either what was there before (or
// nothing) or the whole new content, never a part of it: the content goes to a temporary file
// in the same directory, which is fsynced and closed, and only then put in place, by a rename
// (Replace) or by a link that never replaces a file (Link). SyncDir makes the placing itself
// durable. It imports nothing of this module.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is a temporary file beside its destination. Write to it, then put it in place with
// Replace or Link; Discard (deferred) removes it when it was not put in place.
type File struct {
	f      *os.File // nil once finished
	tmp    string   // the temporary file's path; "" once placed or removed
	path   string
	finErr error
}

// Create opens a new temporary file in the directory of path, hidden (".<name>.tmp-*"), with
// permissions perm, set before anything is written.
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{f: f, tmp: f.Name(), path: path}, nil
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	if f.f == nil {
		return 0, fmt.Errorf("write %s: the file is finished", f.path)
	}
	return f.f.Write(p)
}

// Finish fsyncs and closes the temporary file: its content is then durable but not yet in
// place. Replace and Link call it; call it first to write several files before placing any.
// A second call returns the first one's answer.
func (f *File) Finish() error {
	if f.f == nil {
		return f.finErr
	}
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	f.f, f.finErr = nil, err
	return err
}

// Replace finishes the file and renames it to its path, replacing what is there.
func (f *File) Replace() error {
	if err := f.Finish(); err != nil {
		return err
	}
	if err := os.Rename(f.tmp, f.path); err != nil {
		return err
	}
	f.tmp = ""
	return nil
}

// Link finishes the file and puts it at its path only when nothing is there: the error is then
// fs.ErrExist. On a file system without hard links it renames after checking that the path is
// free (a file created in between would be replaced).
func (f *File) Link() error {
	if err := f.Finish(); err != nil {
		return err
	}
	if err := os.Link(f.tmp, f.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		if _, lerr := os.Lstat(f.path); lerr == nil {
			return &fs.PathError{Op: "link", Path: f.path, Err: fs.ErrExist}
		}
		if err := os.Rename(f.tmp, f.path); err != nil {
			return err
		}
		f.tmp = ""
		return nil
	}
	os.Remove(f.tmp) // the path holds the content now; the temporary name is a second link
	f.tmp = ""
	return nil
}

// Discard closes and removes the temporary file unless it was put in place. It is safe to
// call at any time, and more than once.
func (f *File) Discard() {
	if f.f != nil {
		f.f.Close()
		f.f, f.finErr = nil, errors.New("discarded")
	}
	if f.tmp != "" {
		os.Remove(f.tmp)
		f.tmp = ""
	}
}

// SyncDir fsyncs the directory that holds path, so that a file put there survives a crash.
func SyncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
