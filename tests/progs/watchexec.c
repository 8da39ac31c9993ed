// watchexec [-f] CMD [ARG...]: run CMD watched by memmon from its first instruction.
// The child waits on a pipe until the parent has written its pid to
// /proc/memmon/watch-pids ("+PID" with -f: follow its children), then execs CMD.
// watchexec -s CMD [ARG...]: watch itself with its children ("+SELF") and fork, so that the
// child is watched from its fork on, every fault of it included; then print on stderr the
// child's pid and the faults the kernel counted for it (wait4's minflt + majflt):
// "child=PID child_faults=N".
// Exits with CMD's status (128+signal if killed).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int follow = 0, go[2], status;
	char buf[32];
	struct rusage usage;
	pid_t pid;
	FILE *f;

	if (argc > 2 && !strcmp(argv[1], "-s")) {
		f = fopen("/proc/memmon/watch-pids", "w");
		if (!f || fprintf(f, "+%d\n", getpid()) < 0 || fclose(f))
			return perror("watchexec: /proc/memmon/watch-pids"), 2;
		pid = fork();
		if (pid < 0)
			return perror("fork"), 2;
		if (pid == 0) {
			execvp(argv[2], argv + 2);
			perror(argv[2]);
			_exit(127);
		}
		if (wait4(pid, &status, 0, &usage) < 0)
			return perror("wait4"), 2;
		fprintf(stderr, "child=%d child_faults=%ld\n", pid,
			usage.ru_minflt + usage.ru_majflt);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
		return WEXITSTATUS(status);
	}
	if (argc > 1 && !strcmp(argv[1], "-f")) {
		follow = 1;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: watchexec [-f] CMD [ARG...]\n");
		return 2;
	}
	if (pipe(go))
		return perror("pipe"), 2;
	pid = fork();
	if (pid < 0)
		return perror("fork"), 2;
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], buf, 1) != 1)
			_exit(126);
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	close(go[0]);
	f = fopen("/proc/memmon/watch-pids", "w");
	if (!f || fprintf(f, "%s%d\n", follow ? "+" : "", pid) < 0 || fclose(f)) {
		perror("watchexec: /proc/memmon/watch-pids");
		kill(pid, 9);
		return 2;
	}
	if (write(go[1], "g", 1) != 1)
		return perror("write"), 2;
	close(go[1]);
	if (waitpid(pid, &status, 0) < 0)
		return perror("waitpid"), 2;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
