package adapter

// TmpBytes is the size of a container sandbox's /tmp (a memory-backed file system, charged to the
// sandbox's memory) from its setting and its memory limit: the setting when it is positive, else
// half the memory limit, as the local adapter sizes its temporary directories, so that filling
// /tmp ends in ENOSPC rather than in the OOM killer and leaves the other half to the programs.
// A toolchain needs room there: a cold `go test` of a small module keeps about 75 MiB of work
// files in /tmp (issue 35). 0 (memory not limited, memory <= 0) means no size of its own: the
// kernel's default for a tmpfs, half the host's memory.
func TmpBytes(setting, memory int64) int64 {
	switch {
	case setting > 0:
		return setting
	case memory > 0:
		return memory / 2
	}
	return 0
}
