// cgclone DIR CMD [ARG...]: run CMD in a new process that clone3(CLONE_INTO_CGROUP) puts in
// the cgroup v2 directory DIR from its creation, while the parent stays where it is.
// Prints "child=PID" on stderr before it waits; exits with CMD's status (128+signal if
// killed).
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct clone_args args;
	int fd, status;
	long pid;

	if (argc < 3) {
		fprintf(stderr, "usage: cgclone DIR CMD [ARG...]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return perror(argv[1]), 2;
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return perror("clone3"), 2;
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	fprintf(stderr, "child=%ld\n", pid);
	if (waitpid(pid, &status, 0) < 0)
		return perror("waitpid"), 2;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
