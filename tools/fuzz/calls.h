/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calls a fuzzer program is made of: every ioctl of /dev/radianceN and
 * of the control node, with typed arguments; packets written into mapped
 * rings; mmap at real and bogus offsets; dma-bufs and sync_files from the
 * driver, udmabuf and sw_sync; fds passed to another process; fork with
 * live objects; signals into blocking waits; serving the devices a program
 * declares on the control node; reading the module's debugfs statistics and
 * its tracepoints while all this goes on.
 */
#ifndef RADIANCE_FUZZ_CALLS_H
#define RADIANCE_FUZZ_CALLS_H

#include <pthread.h>

#include "cover.h"
#include "prog.h"

enum op {
	OP_OPEN_DEVICE,
	OP_CLOSE,
	OP_DUP,
	OP_GET_INFO,
	OP_BO_CREATE,
	OP_BO_DESTROY,
	OP_BO_INFO,
	OP_BO_EXPORT,
	OP_BO_IMPORT,
	OP_SEM_CREATE,
	OP_SEM_DESTROY,
	OP_SEM_SIGNAL,
	OP_SEM_QUERY,
	OP_SEM_FAIL,
	OP_SEM_WAIT,
	OP_SEM_EXPORT_SYNC_FILE,
	OP_SEM_IMPORT_SYNC_FILE,
	OP_SEM_IMPORT_HANDLE,
	OP_QUEUE_CREATE,
	OP_QUEUE_DESTROY,
	OP_QUEUE_QUERY,
	OP_QUEUE_KICK,
	OP_SUBMIT,
	OP_QUEUE_WAIT,
	OP_MMAP,
	OP_MUNMAP,
	OP_RAW_IOCTL,
	OP_SEND_TO_PEER,
	OP_FORK,
	OP_SIGNAL_WAIT,
	OP_UDMABUF,
	OP_SW_SYNC_FENCE,
	OP_SW_SYNC_INC,
	OP_CONTROL_OPEN,
	OP_USER_DECLARE,
	OP_USER_HOST_ACCESS,
	OP_USER_RESET,
	OP_CONTROL_READ,
	OP_CONTROL_WRITE,
	OP_POLL,
	OP_USER_SERVE,
	OP_USER_RETIRE,
	OP_USER_PROGRESS,
	/* New ones go here: a corpus names calls by number. */
	OP_DEBUGFS_READ,
	OP_TRACE_EVENTS,
	OP_COUNT
};

/* Where a typed ioctl's argument is (struct call's CALL_PLACE bits): as it
 * is, or where the driver's copy of it fails, or under a command word it
 * must refuse. */
enum arg_place {
	ARG_AS_IS,
	ARG_STRADDLE,		/* runs into an unmapped page: the copy in faults */
	ARG_READ_ONLY,		/* in a read-only page: a copy back faults */
	ARG_SHORT,		/* an older layout's size, or 8 bytes short of it */
	ARG_LONG,		/* the size 8 bytes past it */
	ARG_WRITE_ONLY,		/* _IOW, not _IOWR */
	ARG_PLACES
};

const char *op_name(enum op op);
enum op call_pick_op(struct rng *r);
/* A call of `op` with arguments that are mostly valid, sometimes not. */
void call_generate(struct call *c, enum op op, struct rng *r, const struct hints *h);
/* Appends `c` to `p`, after the calls that make what it needs and that
 * `p` lacks (a device file or a declared device, BOs, a semaphore, a
 * queue, a control file), as syzkaller chains resources: a submission then
 * names a queue, BOs and a semaphore of one file, and its packets can run;
 * on a device the program serves, the server's answer may follow it.
 * False if `p` is full. */
int call_append(struct prog *p, const struct call *c, struct rng *r, const struct hints *h);

/* What a worker keeps between programs: its coverage maps (shared with the
 * processes it forks), its KCOV and the remote one of its work items, the peer process that takes fds over a
 * socket, the second thread that runs a program's async calls. */
struct exec_env {
	struct cover_map *maps;	/* maps[0]: the worker's own, judges new edges */
	int nmaps;
	int remote_nmaps;	/* maps the work items' coverage goes to: the first ones */
	const struct module_text *text;
	struct kcov kcov;
	struct kcov remote;	/* the work items' coverage for this worker's tasks */
	int fail_nth;		/* the main thread's fail-nth file, or -1 */
	int tracing;		/* a program turned the module's events on */
	int peer;		/* unix socket to the peer process */
	pid_t peer_pid;
	int fd_base;		/* fds from here up belong to the running program */
	/* Edges new to maps[0] found by the peer and fork children (shared). */
	uint32_t *remote_fresh;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct async_job *job;	/* queued for the thread, or NULL */
	int busy, stop;
	uint32_t thread_fresh;
};

/* Forks the peer, starts the thread. The last `task_maps` of `maps` count
 * only what the program's own tasks reached, not its work items. 0 or
 * -errno. */
int exec_env_init(struct exec_env *env, struct cover_map *maps, int nmaps, int task_maps,
		  const struct module_text *text);
void exec_env_fini(struct exec_env *env);

/* Runs `p`, then closes and unmaps everything it made. Returns the edges
 * new to env->maps[0]; with `trace` set, prints each call and its result. */
uint32_t prog_exec(struct exec_env *env, const struct prog *p, int trace);

/* Runs `p` with the worker's KCOV in comparison mode and adds the
 * module's comparison constants to `h`. */
void prog_collect_hints(struct exec_env *env, const struct prog *p, struct hints *h);

#endif
