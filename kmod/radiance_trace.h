/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's tracepoints (tracefs events/radiance/): what the scheduler
 * takes, issues and completes, what semaphores and resets do, and what a
 * served device's server reads and answers. The Rust code reaches them
 * through radiance_trace.c's functions (kmod/wrappers/trace.rs);
 * Documentation/tools/radctl.md shows how to record and open them.
 *
 * Every event names its device (dev, the N of /dev/radianceN). A packet is
 * its queue's (pid, queue) and its ring index; a device command is its
 * stream and its id, the device's running count of commands issued. A
 * semaphore is its handle in the process that named it and its id, the
 * same in every process (its dma_fence context).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM radiance

#if !defined(RADIANCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RADIANCE_TRACE_H

#include <linux/tracepoint.h>

/* What kmod/wrappers/trace.rs calls: radiance_trace.c, an event each. */
void radiance_trace_packet(u32 dev, s32 pid, u32 queue, u64 index, u32 kind,
			   u32 stream, u32 commands);
void radiance_trace_packet_done(u32 dev, s32 pid, u32 queue, u64 index,
				u32 error);
void radiance_trace_cmd_issue(u32 dev, u32 stream, u64 id, s32 pid, u32 queue,
			      u64 index, u32 op, u64 units);
void radiance_trace_cmd_done(u32 dev, u32 stream, u64 id, s32 pid, u32 queue,
			     u64 index, u32 status, u32 pc, u32 warp);
bool radiance_trace_sem_enabled(void);
void radiance_trace_sem_signal(u32 dev, s32 pid, u32 queue, u64 index,
			       u32 handle, u64 sem, u64 value, u32 error);
void radiance_trace_wait_done(u32 dev, s32 pid, u32 queue, u64 index,
			      u32 handle, u64 sem, u64 value);
void radiance_trace_reset(u32 dev, u32 stream, u64 resets);
void radiance_trace_user_io(u32 dev, bool read, u32 bytes);

/* uapi/include/radiance.h's packet kinds, as names. */
#define radiance_packet_kinds                                                  \
	{ 1, "nop" }, { 2, "fence" }, { 3, "fill" }, { 4, "copy" },            \
	{ 5, "launch" }, { 6, "read-counter" }, { 7, "timestamp" },            \
	{ 8, "wait" }, { 9, "signal" }, { 10, "launch-desc" }

/* What a device command does (kmod/trace.rs's codes). */
#define radiance_commands                                                      \
	{ 0, "copy" }, { 1, "fill" }, { 2, "launch" }, { 3, "fence" },         \
	{ 4, "wait" }, { 5, "read-counter" }

/* A packet taken from its queue: translated into `commands` device commands
 * on `stream` (none: it completes as it is taken, or at its turn there).
 */
TRACE_EVENT(radiance_packet,
	TP_PROTO(u32 dev, s32 pid, u32 queue, u64 index, u32 kind, u32 stream,
		 u32 commands),
	TP_ARGS(dev, pid, queue, index, kind, stream, commands),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(s32, pid)
		__field(u32, queue)
		__field(u64, index)
		__field(u32, kind)
		__field(u32, stream)
		__field(u32, commands)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->pid = pid;
		__entry->queue = queue;
		__entry->index = index;
		__entry->kind = kind;
		__entry->stream = stream;
		__entry->commands = commands;
	),
	TP_printk("dev=%u pid=%d queue=%u index=%llu kind=%s stream=%u commands=%u",
		  __entry->dev, __entry->pid, __entry->queue, __entry->index,
		  __print_symbolic(__entry->kind, radiance_packet_kinds),
		  __entry->stream, __entry->commands)
);

/* A packet completed (error 0), or its queue faulted there (a positive
 * errno).
 */
TRACE_EVENT(radiance_packet_done,
	TP_PROTO(u32 dev, s32 pid, u32 queue, u64 index, u32 error),
	TP_ARGS(dev, pid, queue, index, error),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(s32, pid)
		__field(u32, queue)
		__field(u64, index)
		__field(u32, error)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->pid = pid;
		__entry->queue = queue;
		__entry->index = index;
		__entry->error = error;
	),
	TP_printk("dev=%u pid=%d queue=%u index=%llu error=%u", __entry->dev,
		  __entry->pid, __entry->queue, __entry->index, __entry->error)
);

/* A device command given to the device, for packet `index` of the queue. */
TRACE_EVENT(radiance_cmd_issue,
	TP_PROTO(u32 dev, u32 stream, u64 id, s32 pid, u32 queue, u64 index,
		 u32 op, u64 units),
	TP_ARGS(dev, stream, id, pid, queue, index, op, units),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u32, stream)
		__field(u64, id)
		__field(s32, pid)
		__field(u32, queue)
		__field(u64, index)
		__field(u32, op)
		__field(u64, units)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->stream = stream;
		__entry->id = id;
		__entry->pid = pid;
		__entry->queue = queue;
		__entry->index = index;
		__entry->op = op;
		__entry->units = units;
	),
	TP_printk("dev=%u stream=%u id=%llu pid=%d queue=%u index=%llu op=%s units=%llu",
		  __entry->dev, __entry->stream, __entry->id, __entry->pid,
		  __entry->queue, __entry->index,
		  __print_symbolic(__entry->op, radiance_commands),
		  __entry->units)
);

/* A device command's response: status 0, or Gluon's error status with the
 * PC and warp it names.
 */
TRACE_EVENT(radiance_cmd_done,
	TP_PROTO(u32 dev, u32 stream, u64 id, s32 pid, u32 queue, u64 index,
		 u32 status, u32 pc, u32 warp),
	TP_ARGS(dev, stream, id, pid, queue, index, status, pc, warp),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u32, stream)
		__field(u64, id)
		__field(s32, pid)
		__field(u32, queue)
		__field(u64, index)
		__field(u32, status)
		__field(u32, pc)
		__field(u32, warp)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->stream = stream;
		__entry->id = id;
		__entry->pid = pid;
		__entry->queue = queue;
		__entry->index = index;
		__entry->status = status;
		__entry->pc = pc;
		__entry->warp = warp;
	),
	TP_printk("dev=%u stream=%u id=%llu pid=%d queue=%u index=%llu status=%u pc=0x%x warp=%u",
		  __entry->dev, __entry->stream, __entry->id, __entry->pid,
		  __entry->queue, __entry->index, __entry->status, __entry->pc,
		  __entry->warp)
);

/* A semaphore event: `sem` (its id, the same in every process) at `value`,
 * named `handle` by process `pid`, at packet `index` of its queue `queue`
 * (all ones for a process's own call), failed with `error` (0: not).
 */
DECLARE_EVENT_CLASS(radiance_sem,
	TP_PROTO(u32 dev, s32 pid, u32 queue, u64 index, u32 handle, u64 sem,
		 u64 value, u32 error),
	TP_ARGS(dev, pid, queue, index, handle, sem, value, error),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(s32, pid)
		__field(u32, queue)
		__field(u64, index)
		__field(u32, handle)
		__field(u64, sem)
		__field(u64, value)
		__field(u32, error)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->pid = pid;
		__entry->queue = queue;
		__entry->index = index;
		__entry->handle = handle;
		__entry->sem = sem;
		__entry->value = value;
		__entry->error = error;
	),
	TP_printk("dev=%u pid=%d queue=%u index=%llu handle=%u sem=%llu value=%llu error=%u",
		  __entry->dev, __entry->pid, __entry->queue, __entry->index,
		  __entry->handle, __entry->sem, __entry->value, __entry->error)
);

/* A queue's SIGNAL_SEMAPHORE or a process's SEM_SIGNAL raised the semaphore
 * to `value`, or SEM_FAIL or a failed queue failed it with `error`.
 */
DEFINE_EVENT(radiance_sem, radiance_sem_signal,
	TP_PROTO(u32 dev, s32 pid, u32 queue, u64 index, u32 handle, u64 sem,
		 u64 value, u32 error),
	TP_ARGS(dev, pid, queue, index, handle, sem, value, error)
);

/* A queue's WAIT_SEMAPHORE found the semaphore at `value`: the queue goes on
 * past it (error 0).
 */
DEFINE_EVENT(radiance_sem, radiance_wait_done,
	TP_PROTO(u32 dev, s32 pid, u32 queue, u64 index, u32 handle, u64 sem,
		 u64 value, u32 error),
	TP_ARGS(dev, pid, queue, index, handle, sem, value, error)
);

/* The device was reset: its watchdog found `stream` stuck, or (stream all
 * ones) a process or the server asked.
 */
TRACE_EVENT(radiance_reset,
	TP_PROTO(u32 dev, u32 stream, u64 resets),
	TP_ARGS(dev, stream, resets),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u32, stream)
		__field(u64, resets)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->stream = stream;
		__entry->resets = resets;
	),
	TP_printk("dev=%u stream=%u resets=%llu", __entry->dev,
		  __entry->stream, __entry->resets)
);

/* A served device's server read `bytes` of command frames (`read`), or
 * wrote `bytes` of responses (`!read`), through its control file.
 */
TRACE_EVENT(radiance_user_io,
	TP_PROTO(u32 dev, bool read, u32 bytes),
	TP_ARGS(dev, read, bytes),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(bool, read)
		__field(u32, bytes)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->read = read;
		__entry->bytes = bytes;
	),
	TP_printk("dev=%u %s bytes=%u", __entry->dev,
		  __entry->read ? "read" : "answer", __entry->bytes)
);

#endif /* RADIANCE_TRACE_H */

/* Outside the include guard: define_trace.h reads this file again. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE radiance_trace
#include <trace/define_trace.h>
