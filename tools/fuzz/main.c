// SPDX-License-Identifier: GPL-2.0
/*
 * radiance-fuzz: a coverage-guided fuzzer of the Radiance uapi, a fail-nth
 * sweep and a module-load sweep, for the guest on the debug kernel (KCOV,
 * KASAN, fault injection). Prints KTAP.
 *
 *	radiance-fuzz fuzz [--seed N] [--execs N] [--seconds S] [--procs N]
 *	                   [--corpus-in DIR] [--corpus-out DIR] [--print-corpus]
 *	                   [--print-cover]
 *	radiance-fuzz fail-nth [STEP]
 *	radiance-fuzz replay HEX
 *	radiance-fuzz load [--print-cover]
 *	radiance-fuzz params CASE	(the parameters `load` loads CASE with)
 *
 * --ko PATH (default /radiance.ko) is the module file that was loaded (that
 * `load` loads itself, the module unloaded when it starts): its sections
 * give the edges' total. A fuzz run with --execs and a --seed is
 * the reproducible CI mode; --seconds without --execs is the long mode.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calls.h"
#include "fuzz.h"
#include "prog.h"

static const char *const counter_keys[] = {
	"vram_bos", "host_pinned", "semaphores", "queues", "commands_in_flight", "open_files",
};

/* Whether every emulated device's counters are back to zero (waiting up to
 * 10 s for work in flight); says which one is not. */
static int objects_freed(void)
{
	for (int tries = 0; tries < 100; tries++) {
		int clean = 1;

		for (int dev = 0; dev < 2; dev++) {
			char path[64], key[64];
			long long value;
			FILE *f;

			snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%d/mem", dev);
			f = fopen(path, "r");
			if (!f)
				continue;
			while (fscanf(f, "%63s %lld", key, &value) == 2) {
				for (size_t i = 0; i < sizeof(counter_keys) / sizeof(counter_keys[0]); i++) {
					if (strcmp(key, counter_keys[i]) || !value)
						continue;
					if (tries == 99)
						printf("# radiance%d: %s %lld after the fuzzer\n", dev, key, value);
					clean = 0;
				}
			}
			fclose(f);
		}
		if (clean)
			return 1;
		usleep(100000);
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: radiance-fuzz fuzz|fail-nth|replay|load|params [options]"
			" (see tools/fuzz/main.c)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct fuzz_opts o = { .seed = 1, .procs = 2, .status_every = 30 };
	struct module_text text;
	const char *ko = "/radiance.ko", *mode, *arg = NULL;
	int ret;

	if (argc < 2)
		usage();
	mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--print-corpus")) {
			o.print_corpus = 1;
			continue;
		}
		if (!strcmp(a, "--print-cover")) {
			o.print_cover = 1;
			continue;
		}
		if (a[0] != '-') {
			arg = a;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--ko"))
			ko = v;
		else if (!strcmp(a, "--seed"))
			o.seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--execs"))
			o.execs = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--seconds"))
			o.seconds = atof(v);
		else if (!strcmp(a, "--procs"))
			o.procs = atoi(v);
		else if (!strcmp(a, "--corpus-in"))
			o.corpus_in = v;
		else if (!strcmp(a, "--corpus-out"))
			o.corpus_out = v;
		else if (!strcmp(a, "--status"))
			o.status_every = atof(v);
		else
			usage();
	}
	if (o.procs < 1 || o.procs > FUZZ_MAX_PROCS || (!o.execs && !o.seconds && !strcmp(mode, "fuzz")))
		usage();
	/* Not a test: what a load case loads the module with, for the guest
	 * job to insmod with. */
	if (!strcmp(mode, "params")) {
		const char *params = arg ? module_load_params(arg) : NULL;

		if (!params)
			usage();
		printf("%s\n", params);
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (!strcmp(mode, "load"))
		return module_load_sweep(ko, o.print_cover) != 0;
	ret = module_text_load(&text, ko);
	if (ret) {
		printf("1..1\n# radiance.ko's text from /sys/module and %s: %s (a kernel without KCOV?)\n", ko,
		       strerror(-ret));
		printf("not ok 1 radiance_fuzz_%s\n", mode);
		return 1;
	}
	printf("# radiance.ko: %u edges in [%#llx, %#llx)\n", text.edges, (unsigned long long)text.lo,
	       (unsigned long long)text.hi);

	if (!strcmp(mode, "fail-nth")) {
		uint32_t sites;
		int failed = fail_nth_sweep(&text, arg, &sites);

		printf("# fail-nth: %u fault sites injected, %d steps failed\n", sites, failed);
		return failed != 0;
	}
	if (!strcmp(mode, "replay")) {
		struct cover_map map;
		struct exec_env env;
		struct prog p;

		printf("1..1\n");
		if (!arg || prog_parse_hex(&p, arg) || cover_map_init(&map, &text) ||
		    exec_env_init(&env, &map, 1, 0, &text)) {
			printf("not ok 1 radiance_fuzz_replay\n");
			return 1;
		}
		printf("# replay: %u new edges\n", prog_exec(&env, &p, 1));
		exec_env_fini(&env);
		printf("ok 1 radiance_fuzz_replay\n");
		return 0;
	}
	if (!strcmp(mode, "fuzz")) {
		uint32_t edges, remote_only;
		uint64_t execs;
		double seconds;
		int freed;

		printf("1..2\n");
		printf("# fuzz: seed %llu, %d workers, budget %llu execs, %.0f s\n", (unsigned long long)o.seed,
		       o.procs, (unsigned long long)o.execs, o.seconds);
		ret = fuzz_run(&o, &text, &edges, &remote_only, &execs, &seconds);
		printf("# fuzz: %llu execs in %.1f s (%.1f execs/s), %u of %u edges (%.1f%%), "
		       "%u of them reached only in work items\n",
		       (unsigned long long)execs, seconds, execs / seconds, edges, text.edges,
		       100.0 * edges / text.edges, remote_only);
		printf("%s 1 fuzz_seed_%llu\n", ret ? "not ok" : "ok", (unsigned long long)o.seed);
		freed = objects_freed();
		printf("%s 2 fuzz_objects_freed\n", freed ? "ok" : "not ok");
		return ret || !freed;
	}
	usage();
	return 2;
}
