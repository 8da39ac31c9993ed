// stress MODE: load for the stress scenarios (tests/stress/).
//   storm THREADS SECONDS
//                 THREADS threads map 64 pages, write each, unmap, over and over, for
//                 SECONDS; prints maps=N (mmap+munmap pairs of all threads)
//   fuzz WRITES SEED
//                 WRITES random writes to /proc/memmon/watch-pids (valid, invalid, huge,
//                 binary, ranges, signs, several per write, races with exits), each checked
//                 against a model of the watched set: the write's result (0 or errno) and
//                 the read-back; prints writes=N divergences=N and each divergence
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- storm ---------------------------------------------------------------------------- */

static double deadline;
static long maps[64];

static void *storm_thread(void *arg)
{
	long i = (long)arg;
	size_t len = 64 * 4096;

	while (now() < deadline) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			abort();
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;
		munmap(p, len);
		maps[i]++;
	}
	return NULL;
}

static int storm(int threads, double seconds)
{
	pthread_t t[64];
	long total = 0;

	if (threads < 1 || threads > 64)
		return fprintf(stderr, "stress: 1 to 64 threads\n"), 2;
	deadline = now() + seconds;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, storm_thread, (void *)i);
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total += maps[i];
	}
	printf("maps=%ld\n", total);
	return 0;
}

/* ---- fuzz ----------------------------------------------------------------------------- */

#define PID_LIMIT (4 * 1024 * 1024)
#define LIVE 12
#define DEAD 32
#define WRITE_MAX 8192

/* The model: watched pids with their follow flag (only pids this program knows). */
struct entry {
	int pid;
	int follow;
};
static struct entry model[LIVE + 8];
static int nmodel;
static int live[LIVE];		/* live children (sleeping) */
static int dead[DEAD];		/* reaped children */
static int ndead;
static int self, tids[2];	/* this process and two of its threads */
static long divergences, writes;

static int model_find(int pid)
{
	for (int i = 0; i < nmodel; i++)
		if (model[i].pid == pid)
			return i;
	return -1;
}

static void model_set(struct entry *m, int *n, int pid, int follow)
{
	for (int i = 0; i < *n; i++)
		if (m[i].pid == pid) {
			m[i].follow = follow;
			return;
		}
	m[*n].pid = pid;
	m[*n].follow = follow;
	(*n)++;
}

static void model_remove(struct entry *m, int *n, int pid)
{
	for (int i = 0; i < *n; i++)
		if (m[i].pid == pid) {
			m[i] = m[--*n];
			return;
		}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The watch-pids read form of the model: sorted, ranges, commas, newline. */
static void model_format(char *out)
{
	int pids[LIVE + 8], n = nmodel;

	for (int i = 0; i < n; i++)
		pids[i] = model[i].pid;
	qsort(pids, n, sizeof(int), cmp_int);
	*out = 0;
	for (int i = 0; i < n;) {
		int j = i;

		while (j + 1 < n && pids[j + 1] == pids[j] + 1)
			j++;
		out += sprintf(out, "%s", i ? "," : "");
		if (i == j)
			out += sprintf(out, "%d", pids[i]);
		else
			out += sprintf(out, "%d-%d", pids[i], pids[j]);
		i = j + 1;
	}
	strcat(out, "\n");
}

static int is_live_child(int pid)
{
	for (int i = 0; i < LIVE; i++)
		if (live[i] == pid)
			return 1;
	return 0;
}

/* The global tgid a live pid or tid of ours resolves to, or 0 if none. */
static int resolve(int pid)
{
	if (pid == self || pid == tids[0] || pid == tids[1])
		return self;
	return is_live_child(pid) ? pid : 0;
}

static int spawn(void)
{
	int pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	if (pid < 0)
		abort();
	/* A child of a followed process is watched from its fork, following too. */
	int i = model_find(self);

	if (i >= 0 && model[i].follow)
		model_set(model, &nmodel, pid, 1);
	return pid;
}

static void reap(int slot)
{
	int pid = live[slot];

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* Its exit took it out of the set. */
	model_remove(model, &nmodel, pid);
	dead[ndead++ % DEAD] = pid;
	live[slot] = spawn();
}

static void *sleeper(void *arg)
{
	tids[(long)arg] = syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

/* A known pid: live child, self, own thread, reaped child. */
static int some_pid(void)
{
	switch (rand() % 6) {
	case 0:
		return self;
	case 1:
		return tids[rand() % 2];
	case 2:
		return ndead ? dead[rand() % (ndead < DEAD ? ndead : DEAD)] : self;
	default:
		return live[rand() % LIVE];
	}
}

/*
 * One token, appended to buf; applies it to the pending model m (if valid) and returns
 * the errno the module gives for it alone: 0, EINVAL or ESRCH.
 */
static int token(char *buf, struct entry *m, int *n)
{
	char *t = buf + strlen(buf);
	int pid = some_pid(), r = rand() % 100;

	if (r < 30) {		/* N */
		sprintf(t, "%s%d", rand() % 8 ? "" : "000", pid);
		if (!resolve(pid))
			return ESRCH;
		model_set(m, n, resolve(pid), 0);
		return 0;
	} else if (r < 45) {	/* +N */
		sprintf(t, "+%d", pid);
		if (!resolve(pid))
			return ESRCH;
		model_set(m, n, resolve(pid), 1);
		return 0;
	} else if (r < 65) {	/* -N */
		sprintf(t, "-%d", pid);
		model_remove(m, n, resolve(pid) ? resolve(pid) : pid);
		return 0;
	} else if (r < 68) {	/* 0: clear */
		strcpy(t, rand() % 2 ? "0" : "0000000000");
		*n = 0;
		return 0;
	}
	/* Invalid forms. */
	switch (r % 10) {
	case 0:
		sprintf(t, "%d", PID_LIMIT + rand() % 1000);
		break;
	case 1:
		strcpy(t, rand() % 2 ? "12345678901" : "99999999999999999999");
		break;
	case 2:
		strcpy(t, rand() % 3 ? "+0" : rand() % 2 ? "-0" : "+-5");
		break;
	case 3:
		sprintf(t, "%d-%d", pid, pid + 2);
		break;
	case 4:
		sprintf(t, "%d,%d", pid, pid + 1);
		break;
	case 5:
		sprintf(t, "0x%x", pid);
		break;
	case 6:
		strcpy(t, rand() % 2 ? "abc" : "1e3");
		break;
	case 7:
		sprintf(t, "%d\x01", pid);
		break;
	case 8:
		strcpy(t, rand() % 2 ? "+" : "-");
		break;
	default:
		sprintf(t, "--%d", pid);
		break;
	}
	return EINVAL;
}

static const char *seps[] = { " ", "\t", "\n", "  ", " \n", "\f", "\r" };

static void check(const char *what, int got, int want)
{
	static char real[65536], expect[4096];
	int fd = open("/proc/memmon/watch-pids", O_RDONLY);
	ssize_t len;

	if (fd < 0)
		perror("open watch-pids"), exit(1);
	len = read(fd, real, sizeof(real) - 1);
	close(fd);
	real[len < 0 ? 0 : len] = 0;
	model_format(expect);
	if (got != want || strcmp(real, expect)) {
		divergences++;
		if (divergences <= 20)
			printf("divergence after write %ld (%s): result %d, want %d; set '%.*s', want '%.*s'\n",
			       writes, what, got, want, (int)strcspn(real, "\n"), real,
			       (int)strcspn(expect, "\n"), expect);
		/* Resynchronise: start again from an empty set. */
		fd = open("/proc/memmon/watch-pids", O_WRONLY);
		if (write(fd, "0", 1) != 1)
			perror("clear");
		close(fd);
		nmodel = 0;
	}
}

/* One write of len bytes; returns 0 or errno. */
static int write_watch(const char *buf, size_t len)
{
	int fd = open("/proc/memmon/watch-pids", O_WRONLY), err = 0;

	if (fd < 0)
		perror("open watch-pids"), exit(1);
	if (write(fd, buf, len) < 0)
		err = errno;
	close(fd);
	return err;
}

static int fuzz(long count, unsigned int seed)
{
	static char buf[WRITE_MAX + 64];
	pthread_t t[2];

	srand(seed);
	self = getpid();
	signal(SIGCHLD, SIG_DFL);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, sleeper, (void *)i);
	while (!tids[0] || !tids[1])
		usleep(1000);
	for (int i = 0; i < LIVE; i++)
		live[i] = spawn();
	/* Some reaped children to start with. */
	for (int i = 0; i < 4; i++)
		reap(rand() % LIVE);
	write_watch("0", 1);
	nmodel = 0;

	for (writes = 1; writes <= count; writes++) {
		int r = rand() % 100;

		if (r < 3) {
			/* A process exits (and is reaped) between writes. */
			reap(rand() % LIVE);
			check("after an exit", 0, 0);
			continue;
		}
		if (r < 6) {
			/* A write racing with the exit of the process it names. */
			int slot = rand() % LIVE, pid = live[slot], err;

			kill(pid, SIGKILL);
			sprintf(buf, "%s%d", rand() % 2 ? "+" : "", pid);
			err = write_watch(buf, strlen(buf));
			reap(slot);
			/* Either it was still alive (then its exit removed it) or not. */
			check("racing an exit", err == ESRCH ? 0 : err, 0);
			continue;
		}
		if (r < 8) {
			/* Too big: EINVAL, nothing applied. */
			size_t len = WRITE_MAX + 1 + rand() % 32;

			memset(buf, ' ', len);
			sprintf(buf, "%d", self);
			buf[strlen(buf)] = ' ';
			check("a write over 8192 bytes", write_watch(buf, len), EINVAL);
			continue;
		}
		if (r < 10) {
			/* Nothing but white space: EINVAL. */
			check("an empty write", write_watch(r % 2 ? "\n" : " \t ", r % 2 ? 1 : 3), EINVAL);
			continue;
		}
		/* One to four tokens, all or nothing: the first bad one gives the error. */
		struct entry pending[LIVE + 8];
		int npending = nmodel, want = 0, ntokens = 1 + rand() % 4;

		memcpy(pending, model, sizeof(model));
		buf[0] = 0;
		if (rand() % 4 == 0)
			strcat(buf, seps[rand() % 7]);
		for (int i = 0; i < ntokens; i++) {
			int err;

			if (i)
				strcat(buf, seps[rand() % 7]);
			err = token(buf, pending, &npending);
			if (err && !want)
				want = err;
		}
		if (rand() % 3 == 0)
			strcat(buf, "\n");
		int got = write_watch(buf, strlen(buf));

		if (!want) {
			memcpy(model, pending, sizeof(model));
			nmodel = npending;
		}
		check(buf, got, want);
	}
	writes--;
	printf("writes=%ld divergences=%ld\n", writes, divergences);
	for (int i = 0; i < LIVE; i++) {
		kill(live[i], SIGKILL);
		waitpid(live[i], NULL, 0);
	}
	return divergences != 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "storm"))
		return storm(atoi(argv[2]), atof(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "fuzz"))
		return fuzz(atol(argv[2]), strtoul(argv[3], NULL, 10));
	fprintf(stderr, "usage: stress storm THREADS SECONDS | fuzz WRITES SEED\n");
	return 2;
}
