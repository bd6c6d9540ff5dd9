// SPDX-License-Identifier: GPL-2.0
/*
 * The coverage-guided loop: worker processes each keep a corpus of the
 * programs that reached edges of radiance.ko new to them, and run mutants
 * of it (or fresh programs). A worker's choices depend only on its seed and
 * on what the kernel did, never on the other workers: its own coverage map
 * judges what is new, a shared one counts the edges of all of them, and
 * another the edges their tasks reached themselves: the difference is what
 * only the module's work items reached (remote KCOV).
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "calls.h"
#include "prog.h"

/* Programs a worker holds, about 1.5 KiB each: more than the long mode's
 * corpus directory gathers over many runs. */
#define CORPUS_MAX 8192

struct shared {
	uint64_t execs;
	uint32_t corpus;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t fnv(const void *data, size_t len)
{
	const uint8_t *b = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Loads the corpus directory in name order: the same corpus always seeds
 * the workers the same way. */
static uint32_t corpus_load(const char *dir, struct prog *corpus)
{
	struct dirent **names;
	int n = dir ? scandir(dir, &names, NULL, by_name) : -1;
	uint32_t loaded = 0;

	for (int i = 0; i < n; i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && loaded < CORPUS_MAX && !prog_load(&corpus[loaded], path))
			loaded++;
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return loaded;
}

static void worker(const struct fuzz_opts *o, int id, struct cover_map *global, struct cover_map *tasks,
		   const struct module_text *text, struct shared *sh, uint64_t budget, double until)
{
	struct cover_map maps[3] = { { .text = text }, *global, *tasks };
	struct prog *corpus = calloc(CORPUS_MAX, sizeof(*corpus));
	struct hints hints = { 0 };
	struct exec_env env;
	struct rng r;
	uint32_t n_corpus = 0;

	if (!corpus || cover_map_init(&maps[0], text) || exec_env_init(&env, maps, 3, 1, text)) {
		printf("# fuzz: worker %d could not start: %s\n", id, strerror(errno));
		_exit(2);
	}
	rng_seed(&r, o->seed * 1000003 + id);
	n_corpus = corpus_load(o->corpus_in, corpus);
	/* The loaded corpus first, as it is: its edges are not new. Within
	 * the time, which a big corpus on a slow kernel could outlast. */
	for (uint32_t i = 0; i < n_corpus && now_s() < until; i++) {
		prog_exec(&env, &corpus[i], 0);
		__atomic_add_fetch(&sh->execs, 1, __ATOMIC_RELAXED);
	}
	for (uint64_t exec = 0; exec < budget && now_s() < until; exec++) {
		struct prog p;
		uint32_t fresh;

		if (!n_corpus || rng_one_in(&r, 5)) {
			prog_generate(&p, &r, &hints, 1 + rng_below(&r, 12));
		} else {
			p = corpus[rng_below(&r, n_corpus)];
			for (int m = 1 + rng_below(&r, 3); m > 0; m--)
				prog_mutate(&p, &r, &hints, &corpus[rng_below(&r, n_corpus)]);
		}
		fresh = prog_exec(&env, &p, 0);
		__atomic_add_fetch(&sh->execs, 1, __ATOMIC_RELAXED);
		if (fresh) {
			/* A full corpus keeps learning: a random entry makes room
			 * (the one on disk keeps every entry). */
			corpus[n_corpus < CORPUS_MAX ? n_corpus++ : rng_below(&r, CORPUS_MAX)] = p;
			__atomic_add_fetch(&sh->corpus, 1, __ATOMIC_RELAXED);
			if (o->corpus_out) {
				char path[512];
				size_t len = offsetof(struct prog, c) + p.n * sizeof(p.c[0]);

				snprintf(path, sizeof(path), "%s/%016llx", o->corpus_out,
					 (unsigned long long)fnv(&p, len));
				prog_save(&p, path);
			}
			if (o->print_corpus)
				prog_print_hex(&p, "radiance-fuzz-corpus: ");
		}
		/* Now and then, the constants the module compares against. */
		if (n_corpus && exec % 64 == 63)
			prog_collect_hints(&env, &corpus[rng_below(&r, n_corpus)], &hints);
	}
	exec_env_fini(&env);
	_exit(0);
}

int fuzz_run(const struct fuzz_opts *o, const struct module_text *text, uint32_t *edges, uint32_t *remote_only,
	     uint64_t *execs, double *seconds)
{
	struct cover_map global, tasks;
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double start = now_s(), until = o->seconds ? start + o->seconds : 1e300, last = start;
	pid_t pids[FUZZ_MAX_PROCS];
	int failed = 0, running;

	if (sh == MAP_FAILED || cover_map_init(&global, text) || cover_map_init(&tasks, text))
		return -ENOMEM;
	for (int i = 0; i < o->procs; i++) {
		uint64_t budget = o->execs ? o->execs / o->procs + (i < (int)(o->execs % o->procs)) : UINT64_MAX;

		fflush(stdout);
		pids[i] = fork();
		if (pids[i] < 0)
			return -errno;
		if (!pids[i])
			worker(o, i, &global, &tasks, text, sh, budget, until);
	}
	running = o->procs;
	while (running) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			for (int i = 0; i < o->procs; i++) {
				if (pids[i] != pid)
					continue;
				running--;
				if (!WIFEXITED(status) || WEXITSTATUS(status)) {
					printf("# fuzz: worker %d ended with %s %d\n", i,
					       WIFEXITED(status) ? "exit status" : "signal",
					       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
					failed = 1;
				}
			}
			continue;
		}
		/* A worker stuck in the kernel past the budget by a minute is a hang. */
		if (o->seconds && now_s() > until + 60) {
			printf("# fuzz: workers still running 60 s after the deadline: hung\n");
			for (int i = 0; i < o->procs; i++)
				kill(pids[i], SIGKILL);
			failed = 1;
		}
		if (now_s() - last >= o->status_every) {
			last = now_s();
			printf("# fuzz: %llu execs, %.1f execs/s, %u of %u edges, corpus %u\n",
			       (unsigned long long)sh->execs, sh->execs / (last - start),
			       cover_map_count(&global), text->edges, sh->corpus);
			fflush(stdout);
		}
		usleep(100000);
	}
	if (o->print_cover)
		cover_map_print(&global, "radiance-fuzz-cover:");
	*edges = cover_map_count(&global);
	*remote_only = *edges - cover_map_count(&tasks);
	*execs = sh->execs;
	*seconds = now_s() - start;
	return failed ? -ECHILD : 0;
}
