// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `host` backend: a plain CPU implementation of the HAL that defines
//! the semantics every device backend must match (the conformance suite
//! checks them against it). Queues are worker threads, semaphores are real
//! timeline semaphores on a mutex and condvar, memory is anonymous mappings
//! in an emulated 32-bit device address space, and launches run the
//! built-in kernels of `radiance_uapi::builtin`.

mod buffer;
mod device;
mod kernels;
mod queue;
mod semaphore;

pub(crate) use device::HostDevice;
