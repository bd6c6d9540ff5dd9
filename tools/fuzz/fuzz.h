/* SPDX-License-Identifier: GPL-2.0 */
/* The coverage-guided fuzzing loop (fuzz.c), the fail-nth sweep
 * (fail_nth.c) and the module-load sweep (module_load.c) of radiance-fuzz. */
#ifndef RADIANCE_FUZZ_FUZZ_H
#define RADIANCE_FUZZ_FUZZ_H

#include <stdint.h>

#include "cover.h"

#define FUZZ_MAX_PROCS 16

struct fuzz_opts {
	uint64_t seed;
	uint64_t execs;		/* all workers together; 0: no bound */
	double seconds;		/* 0: no bound */
	int procs;
	const char *corpus_in;	/* directory to start from, or NULL */
	const char *corpus_out;	/* directory new entries go to, or NULL */
	int print_corpus;	/* also print them on stdout, as hex */
	int print_cover;	/* print the edges reached, as .text offsets */
	double status_every;
};

/* Runs the workers to their budget: the edges they reached, and how many
 * of those only the module's work items reached. 0, or -ECHILD if one died
 * or hung. */
int fuzz_run(const struct fuzz_opts *o, const struct module_text *text, uint32_t *edges,
	     uint32_t *remote_only, uint64_t *execs, double *seconds);

/* Sweeps fail-nth over every step (or only the step named `only`) of a
 * program that makes and uses every kind of object; prints a KTAP test per
 * step. Returns the number of failed tests; *sites gets how many faults
 * were injected. */
int fail_nth_sweep(const struct module_text *text, const char *only, uint32_t *sites);

/* Loads and unloads radiance.ko from `ko` with each parameter set of a
 * list, then once per fault site of its init, under KCOV; prints a KTAP
 * test per set and one for the faults, and with `print_cover` the edges
 * init and exit reached. The module must not be loaded. Returns the number
 * of failed tests, or -1 if it could not start. */
int module_load_sweep(const char *ko, int print_cover);
/* The parameters the sweep loads case `name` with (sim16, gluon24 and
 * gluon_sim are the long mode's parts), or NULL. */
const char *module_load_params(const char *name);

#endif
