// SPDX-License-Identifier: GPL-2.0
/*
 * The module-load sweep: this process loads and unloads radiance.ko itself,
 * with KCOV on, so that the module's init and exit count among the edges
 * reached, which no program reaches (the module is loaded before any runs).
 * Once with each parameter set the fuzzer's parts use and with each one
 * init must refuse, then once per fault site of init (fail-nth, with
 * failslab and then fail_page_alloc limited to stacks through the
 * module's text): each load must do what its case says, succeed or fail
 * with ENOMEM under a fault, and leave no module behind; the job's
 * kmemleak scan after it finds what an unwinding path forgot to free.
 *
 * The sweep needs the module unloaded when it starts. KCOV records
 * absolute PCs, and a module loaded again may land elsewhere (freed module
 * memory is reused lazily): PCs are placed against where the last load that
 * succeeded found the text, and a load whose PCs are not all call sites
 * there is counted as unplaced and its PCs left out.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcov.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault.h"

/* A sweep with more sites than this is reported, not swept to the end. */
#define MAX_NTH 600
#define KUNIT_FILTER "/sys/module/kunit/parameters/filter_glob"
/* What every part of the long mode loads the module with. The guest has
 * 1 GiB: each device, declared ones too, pins at most 64 MiB of HOST
 * buffer objects (512 by default), or tens of them made at once run it out
 * of memory. */
#define FUZZ_JOB_PARAMS \
	"emulated_devices=2 emulated_vram_mib=64 max_pinned_mib=64 launch_timeout_ms=100"

static const struct load_case {
	const char *name, *params;
	int err;		/* what the load must return */
} cases[] = {
	/* The three parts of the long mode (tests/guest/fuzz-job.sh takes
	 * their parameters from here); the first is swept. */
	{ "sim16", FUZZ_JOB_PARAMS " emulated_dialect=1", 0 },
	{ "gluon24", FUZZ_JOB_PARAMS " emulated_dialect=2", 0 },
	{ "gluon_sim",
	  FUZZ_JOB_PARAMS " emulated_dialect=1 emulated_gluon_sim=1 emulated_throttle_us=1000", 0 },
	{ "no_devices_exclusive", "emulated_devices=0 exclusive=1", 0 },
	{ "zero_timeout", "launch_timeout_ms=0", -EINVAL },
	{ "too_many_devices", "emulated_devices=9", -EINVAL },
	{ "no_vram", "emulated_vram_mib=0", -EINVAL },
	{ "vram_past_4_gib", "emulated_vram_mib=4097", -EINVAL },
	{ "unknown_dialect", "emulated_dialect=3", -EINVAL },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* As in fail_nth.c: slab sites come in the same order every load, page
 * sites when a slab happens to need a page, so each has its own pass. */
static const struct pass {
	const char *name;
	unsigned int types;
} passes[] = { { "slab", FAULT_SLAB }, { "page", FAULT_PAGE } };
#define N_PASSES (sizeof(passes) / sizeof(passes[0]))

static struct load_state {
	const char *ko;
	int ko_fd, fail_fd;
	struct kcov kcov;
	struct module_text text;	/* where the module was when first loaded */
	struct cover_map cover;		/* what init and exit reached */
	unsigned int loads, unplaced;
} st;

static int is_loaded(void)
{
	return access("/sys/module/radiance", F_OK) == 0;
}

/* Adds what KCOV traced since it started, the module's text being at `lo`. */
static void collect(uint64_t lo)
{
	if (st.cover.seen && kcov_collect_module(&st.kcov, &st.cover, lo) < 0)
		st.unplaced++;
}

/* Where the loaded module's text begins; learns the first one. */
static uint64_t text_lo(void)
{
	struct module_text now;
	uint64_t lo;

	if (!st.cover.seen) {
		if (module_text_load(&st.text, st.ko) || cover_map_init(&st.cover, &st.text))
			return 0;
		return st.text.lo;
	}
	lo = module_text_load(&now, st.ko) ? 0 : now.lo;
	module_text_free(&now);
	return lo;
}

/*
 * Loads the module with `params`, its n-th fault site failed if n is not 0
 * (*left: what fail-nth had left), and unloads it if it loaded, each under
 * KCOV. Returns the load's result; *why says what went wrong past it (a
 * failed unload, a module left behind), else is NULL.
 */
static int load_unload(const char *params, unsigned int n, int *left, const char **why)
{
	uint64_t lo = st.text.lo;
	int ret;

	*why = NULL;
	st.loads++;
	kcov_start(&st.kcov, KCOV_TRACE_PC);
	if (n)
		fault_arm(st.fail_fd, n);
	ret = syscall(SYS_finit_module, st.ko_fd, params, 0) ? -errno : 0;
	if (n) {
		*left = fault_left(st.fail_fd);
		fault_arm(st.fail_fd, 0);
	}
	if (!ret)
		lo = text_lo();
	collect(lo);
	if (ret) {
		if (is_loaded())
			*why = "a failed load left the module loaded";
		return ret;
	}
	kcov_start(&st.kcov, KCOV_TRACE_PC);
	if (syscall(SYS_delete_module, "radiance", O_NONBLOCK))
		*why = "the module did not unload";
	collect(lo);
	return ret;
}

/* Every fault site of the first case's load, one pass per fault type. */
static const char *sweep(char *detail, size_t len)
{
	for (size_t p = 0; p < N_PASSES; p++) {
		unsigned int injected = 0;

		if (fault_setup(&st.text, passes[p].types))
			return "cannot configure fault injection in debugfs";
		for (unsigned int n = 1;; n++) {
			const char *why;
			int left = -1, ret = load_unload(cases[0].params, n, &left, &why);

			if (why)
				return why;
			if (left > 0) {
				printf("# module load, %s faults: %u sites failed\n", passes[p].name, injected);
				if (ret) {
					snprintf(detail, len, "no fault injected, the load failed: %s", strerror(-ret));
					return detail;
				}
				break;
			}
			injected++;
			if (ret && ret != -ENOMEM) {
				snprintf(detail, len, "%s site %u: the load failed with %s, not ENOMEM",
					 passes[p].name, n, strerror(-ret));
				return detail;
			}
			if (n == MAX_NTH)
				return "more sites than the sweep's bound";
		}
	}
	return NULL;
}

/* KUnit runs the module's suites at every load; a filter that matches none
 * keeps the sweep to the module's own code. Sets KUnit's filter to `glob`,
 * the one it had going to `old` unless that is NULL. */
static void kunit_filter(const char *glob, char *old, size_t len)
{
	int fd = open(KUNIT_FILTER, O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	if (old) {
		n = read(fd, old, len - 1);
		old[n > 0 ? n : 0] = '\0';
		old[strcspn(old, "\n")] = '\0';
	}
	if (write(fd, glob, strlen(glob)) < 0)
		perror(KUNIT_FILTER);
	close(fd);
}

const char *module_load_params(const char *name)
{
	for (size_t c = 0; c < N_CASES; c++)
		if (!strcmp(cases[c].name, name))
			return cases[c].params;
	return NULL;
}

int module_load_sweep(const char *ko, int print_cover)
{
	char detail[160], kunit_was[256] = "";
	const char *why;
	int failed = 0, left;

	st.ko = ko;
	printf("1..%zu\n", N_CASES + 1);
	if (is_loaded()) {
		printf("# module load: radiance is loaded; the sweep loads it itself\n");
		return -1;
	}
	st.ko_fd = open(ko, O_RDONLY | O_CLOEXEC);
	st.fail_fd = fault_open();
	if (st.ko_fd < 0 || st.fail_fd < 0 || kcov_open(&st.kcov)) {
		printf("# module load: cannot open %s, fail-nth or KCOV\n", ko);
		return -1;
	}
	kunit_filter("radiance-fuzz-load-none", kunit_was, sizeof(kunit_was));
	for (size_t c = 0; c < N_CASES; c++) {
		int ret = load_unload(cases[c].params, 0, &left, &why);

		if (!why && ret != cases[c].err) {
			snprintf(detail, sizeof(detail), "\"%s\" loaded with %s, not %s", cases[c].params,
				 ret ? strerror(-ret) : "success", cases[c].err ? strerror(-cases[c].err) : "success");
			why = detail;
		}
		if (why)
			printf("# module load %s: %s\n", cases[c].name, why);
		printf("%s %zu module_load_%s\n", why ? "not ok" : "ok", c + 1, cases[c].name);
		failed += !!why;
	}
	why = st.cover.seen ? sweep(detail, sizeof(detail)) : "the module never loaded";
	if (why)
		printf("# module load fail-nth: %s\n", why);
	printf("%s %zu module_load_fail_nth\n", why ? "not ok" : "ok", N_CASES + 1);
	failed += !!why;
	fault_setup(&st.text, 0);
	kunit_filter(strcmp(kunit_was, "(null)") ? kunit_was : "*", NULL, 0);

	if (st.cover.seen) {
		uint32_t edges = cover_map_count(&st.cover);

		printf("# module load: %u loads, %u unplaced, %u of %u edges (%.1f%%)\n", st.loads,
		       st.unplaced, edges, st.text.edges, 100.0 * edges / st.text.edges);
		if (print_cover)
			cover_map_print(&st.cover, "radiance-fuzz-cover:");
	}
	kcov_close(&st.kcov);
	close(st.fail_fd);
	close(st.ko_fd);
	return failed;
}
