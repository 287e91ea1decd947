//go:build linux && !sandboxer_portable

package local

// UIDLockDir is the directory of the sandbox uids' lock files (see uids_linux.go).
func UIDLockDir() (string, error) {
	d, err := uidDir()
	if err != nil {
		return "", err
	}
	return d.Name(), nil
}

// LeaseUIDFrom leases the first free sandbox uid from uid on, as a sandbox does.
func LeaseUIDFrom(uid int) (leased int, release func(), err error) {
	l, err := allocUIDFrom(uid - HostUID - 1)
	if err != nil {
		return 0, nil, err
	}
	return l.id, l.release, nil
}

// CacheDir is the host directory of a sandbox's caches' upper layers (see caches_linux.go).
func CacheDir(s *Sandbox) string { return s.iso.cacheDir.path }
