/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Coverage of radiance.ko through KCOV: which of the module's instrumented
 * edges (its __sanitizer_cov_trace_pc call sites) a call reached, and the
 * constants its comparisons tested (KCOV_TRACE_CMP), for the fuzzer.
 */
#ifndef RADIANCE_FUZZ_COVER_H
#define RADIANCE_FUZZ_COVER_H

#include <stddef.h>
#include <stdint.h>

/* Where radiance.ko's text lies in this boot, and how many edges it has. */
struct module_text {
	uint64_t lo, hi;	/* [lo, hi): every .text* section */
	uint32_t edges;		/* trace-pc call sites in those sections */
	uint8_t *site;		/* one byte per address of [lo, hi): 1 where KCOV can record */
};

/* Reads the loaded module's sections from /sys/module/radiance/sections
 * and their sizes and call sites from the .ko file it was loaded from.
 * 0 or -errno. */
int module_text_load(struct module_text *text, const char *ko_path);
void module_text_free(struct module_text *text);

/* A set of covered edges, one byte per text address, in memory shared with
 * the processes forked after it (MAP_SHARED). */
struct cover_map {
	const struct module_text *text;
	uint8_t *seen;
};

int cover_map_init(struct cover_map *map, const struct module_text *text);
/* Marks `pc`; returns 1 if it was new. */
int cover_map_add(struct cover_map *map, uint64_t pc);
/* How many edges are marked. */
uint32_t cover_map_count(const struct cover_map *map);
/* Prints the PCs seen as offsets into the module's .text, 16 to a line
 * after `prefix`, for tools/fuzz/cover-report.sh. */
void cover_map_print(const struct cover_map *map, const char *prefix);

/* One thread's KCOV handle; coverage is per task. */
struct kcov {
	int fd;
	uint64_t *area;
	size_t words;
	int mode;		/* KCOV_TRACE_PC or KCOV_TRACE_CMP while enabled, else -1 */
};

/* Opens /sys/kernel/debug/kcov for the calling thread. 0 or -errno. */
int kcov_open(struct kcov *k);
/* Opens a KCOV that collects what the module's work items do for the
 * tasks the caller creates from now on (a common handle, `instance`
 * unique on the system): collect it with kcov_collect_pcs, never start
 * or stop it but by closing it, from the calling thread. */
int kcov_open_remote(struct kcov *k, uint32_t instance);
void kcov_close(struct kcov *k);
/* Starts collecting (PC or CMP mode) from zero; the thread must call
 * kcov_stop before switching modes. */
int kcov_start(struct kcov *k, int mode);
void kcov_stop(struct kcov *k);
/* Adds the PCs collected since kcov_start to `maps` (n of them; the first
 * is the one new edges are judged by); returns the edges new to maps[0]. */
uint32_t kcov_collect_pcs(struct kcov *k, struct cover_map *maps, int n);
/* Adds the PCs collected since kcov_start to `map`, for a run in which the
 * module's text began at `lo`, wherever map's text is: for a module this
 * thread loaded, and perhaps unloaded, itself. Returns the edges new to
 * `map`, or -ESRCH, adding none, if a PC in [lo, lo + size) is no call site:
 * the module was not at `lo` then. */
int kcov_collect_module(struct kcov *k, struct cover_map *map, uint64_t lo);

/* Constants the module compared against, from a CMP-mode trace. */
#define HINTS_MAX 512
struct hints {
	uint32_t n;
	uint64_t v[HINTS_MAX];
};

/* Adds the constant operands of the comparisons in the module's text
 * traced since kcov_start(CMP) to `h` (deduplicated, bounded). */
void kcov_collect_hints(struct kcov *k, const struct module_text *text, struct hints *h);

#endif
