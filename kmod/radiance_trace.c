// SPDX-License-Identifier: GPL-2.0
/*
 * The module's tracepoints (radiance_trace.h), and a function for each that
 * the Rust code calls (kmod/wrappers/trace.rs): a trace_*() call is an
 * inline function with a static key, which Rust cannot expand. Each
 * function is a call and a static-key test while its event is off.
 */
#define CREATE_TRACE_POINTS
#include "radiance_trace.h"

void radiance_trace_packet(u32 dev, s32 pid, u32 queue, u64 index, u32 kind,
			   u32 stream, u32 commands)
{
	trace_radiance_packet(dev, pid, queue, index, kind, stream, commands);
}

void radiance_trace_packet_done(u32 dev, s32 pid, u32 queue, u64 index,
				u32 error)
{
	trace_radiance_packet_done(dev, pid, queue, index, error);
}

void radiance_trace_cmd_issue(u32 dev, u32 stream, u64 id, s32 pid, u32 queue,
			      u64 index, u32 op, u64 units)
{
	trace_radiance_cmd_issue(dev, stream, id, pid, queue, index, op, units);
}

void radiance_trace_cmd_done(u32 dev, u32 stream, u64 id, s32 pid, u32 queue,
			     u64 index, u32 status, u32 pc, u32 warp)
{
	trace_radiance_cmd_done(dev, stream, id, pid, queue, index, status, pc,
				warp);
}

/* Whether a semaphore event is on: its semaphore's id costs a lookup. */
bool radiance_trace_sem_enabled(void)
{
	return trace_radiance_sem_signal_enabled() ||
	       trace_radiance_wait_done_enabled();
}

void radiance_trace_sem_signal(u32 dev, s32 pid, u32 queue, u64 index,
			       u32 handle, u64 sem, u64 value, u32 error)
{
	trace_radiance_sem_signal(dev, pid, queue, index, handle, sem, value,
				  error);
}

void radiance_trace_wait_done(u32 dev, s32 pid, u32 queue, u64 index,
			      u32 handle, u64 sem, u64 value)
{
	trace_radiance_wait_done(dev, pid, queue, index, handle, sem, value, 0);
}

void radiance_trace_reset(u32 dev, u32 stream, u64 resets)
{
	trace_radiance_reset(dev, stream, resets);
}

void radiance_trace_user_io(u32 dev, bool read, u32 bytes)
{
	trace_radiance_user_io(dev, read, bytes);
}
