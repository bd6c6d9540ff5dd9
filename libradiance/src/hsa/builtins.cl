// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// The radiance_uapi::builtin kernels for the hsa backend, in OpenCL C for
// clang's amdgcn-amd-amdhsa target. They use only compiler builtins and the
// dispatch packet, so no device library (ockl, ocml) is linked: Debian's
// clang-19 and lld-19 build them (libradiance/build.rs), one code object
// per GPU generation.
//
// Thread t of the grid handles element t, t < n, with t counted as the host
// backend counts threads: the block's x-major index times the threads per
// block, plus the thread's x-major index inside its block. The host has
// already clipped n to the grid and checked every address against its
// buffer, so these kernels never fault. Every parameter is 64-bit, so the
// kernarg segment is four 8-byte slots at offsets 0, 8, 16, 24.

typedef struct {
	ushort header, setup;
	ushort workgroup_size_x, workgroup_size_y, workgroup_size_z;
	ushort reserved0;
	uint grid_size_x, grid_size_y, grid_size_z;
} dispatch_packet;

static ulong thread_index(void)
{
	__constant dispatch_packet *p = (__constant dispatch_packet *)__builtin_amdgcn_dispatch_ptr();
	ulong bx = p->workgroup_size_x, by = p->workgroup_size_y, bz = p->workgroup_size_z;
	ulong nx = p->grid_size_x / bx, ny = p->grid_size_y / by;
	ulong block = ((ulong)__builtin_amdgcn_workgroup_id_z() * ny + __builtin_amdgcn_workgroup_id_y()) * nx +
		      __builtin_amdgcn_workgroup_id_x();
	ulong inside = ((ulong)__builtin_amdgcn_workitem_id_z() * by + __builtin_amdgcn_workitem_id_y()) * bx +
		      __builtin_amdgcn_workitem_id_x();
	return block * (bx * by * bz) + inside;
}

// dst[t] = value
__kernel void radiance_fill_u32(__global uint *dst, ulong value, ulong n)
{
	ulong t = thread_index();
	if (t < n)
		dst[t] = (uint)value;
}

// dst[t] = src[t]
__kernel void radiance_copy_u32(__global uint *dst, __global const uint *src, ulong n)
{
	ulong t = thread_index();
	if (t < n)
		dst[t] = src[t];
}

// c[t] = a[t] + b[t]
__kernel void radiance_vecadd_u32(__global const uint *a, __global const uint *b, __global uint *c, ulong n)
{
	ulong t = thread_index();
	if (t < n)
		c[t] = a[t] + b[t];
}

// Runs until the host sets *closing (its queue is going away).
__kernel void radiance_spin(__global volatile uint *closing)
{
	while (__atomic_load_n(closing, __ATOMIC_ACQUIRE) == 0)
		__builtin_amdgcn_s_sleep(127);
}

// The HAL's fill, copy and update (after staging), one byte per thread:
// byte t of the range is byte t % width of the little-endian pattern (the
// range is aligned to the pattern's width).
__kernel void radiance_hal_fill(__global uchar *dst, ulong pattern, ulong width, ulong length)
{
	ulong t = thread_index();
	if (t < length)
		dst[t] = (uchar)(pattern >> (8 * (t % width)));
}

__kernel void radiance_hal_copy(__global uchar *dst, __global const uchar *src, ulong length)
{
	ulong t = thread_index();
	if (t < length)
		dst[t] = src[t];
}
