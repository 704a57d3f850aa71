//go:build unix

package main

import "syscall"

// accessible reports whether this process may write to path (and search it when dir), as
// access(2) says: the check made before anything is read or written.
func accessible(path string, dir bool) error {
	mode := uint32(2) // W_OK
	if dir {
		mode |= 1 // X_OK
	}
	return syscall.Access(path, mode)
}
