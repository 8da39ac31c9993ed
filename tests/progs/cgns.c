// cgns [--mount] PROG ARGS...: runs PROG in a new cgroup namespace (unshare(CLONE_NEWCGROUP):
// its root is the caller's cgroup), as a container runtime does (busybox's unshare has no
// -C). With --mount, in a new mount namespace too, with cgroup2 mounted afresh on
// /sys/fs/cgroup: there the file system shows the namespace's cgroups only, from its root.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int mount_too = argc > 1 && !strcmp(argv[1], "--mount");
	char **prog = argv + 1 + mount_too;

	if (!*prog) {
		fprintf(stderr, "usage: cgns [--mount] PROG ARGS...\n");
		return 2;
	}
	if (unshare(CLONE_NEWCGROUP | (mount_too ? CLONE_NEWNS : 0)))
		return perror("cgns: unshare"), 1;
	if (mount_too) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			return perror("cgns: making / private"), 1;
		if (umount2("/sys/fs/cgroup", MNT_DETACH))
			return perror("cgns: umount /sys/fs/cgroup"), 1;
		if (mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL))
			return perror("cgns: mount cgroup2"), 1;
	}
	execvp(prog[0], prog);
	perror(prog[0]);
	return 127;
}
