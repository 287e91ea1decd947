//go:build !linux

package doctor

import "context"

// notLinux is what the local adapter gives up off Linux, said once for every kernel probe.
const notLinux = "not on this system: the local adapter's kernel isolation needs Linux"

// Platform says plainly what this system allows the adapters: off Linux the local adapter has no
// kernel isolation and the oci adapter does not run; docker (Docker Desktop) and memory do.
func Platform() Check {
	return Check{Name: "platform", Detail: platformName() + ": the local adapter has NO kernel isolation here: " +
		"commands run as plain processes of your user, in a process group killed when they end (a descendant " +
		"that calls setsid escapes it); they can read and write whatever you can and reach the network; only " +
		"the file calls (read, write, edit, list) are jailed to the workspace (os.Root). Every command's result " +
		"reports network, filesystem, processTree and limits as not enforced, and --require-isolation refuses " +
		"every command. The docker adapter (Docker Desktop) and the memory adapter work as on Linux; the oci " +
		"adapter needs Linux"}
}

// NetworkNamespace: there are no network namespaces off Linux.
func NetworkNamespace(context.Context) Check {
	return Check{Name: "network namespace", Detail: notLinux}
}

// Landlock: there is no Landlock off Linux.
func Landlock() Check {
	return Check{Name: "landlock", Detail: notLinux}
}
