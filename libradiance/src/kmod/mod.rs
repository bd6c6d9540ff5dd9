// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `kmod` backend of the HAL: a `/dev/radianceN` device behind the
//! traits of `backend.rs`, over the device node's ioctl wrappers
//! ([`crate::node`]).
//!
//! - Buffers are VRAM buffer objects. Host-visible ones are mappable VRAM
//!   (BAR-visible on a board, the emulator's pages in QEMU), or where the
//!   CPU cannot map VRAM (gluon-sim's lives in its process) VRAM with a
//!   host shadow kept in step by copies (`shadow.rs`); an imported dma-buf
//!   is a host BO, which queue commands reach by DMA but kernels cannot
//!   address (Gluon has no GPU virtual memory).
//! - Semaphores are the kernel's timeline semaphores; queries read the
//!   file's value page.
//! - A queue is a kernel queue. Each submission is one unit of packets
//!   (waits, work, signals) that the kernel skips as a whole when a wait's
//!   semaphore has failed, failing the unit's signals, while the queue goes
//!   on (`Queue::with_semaphores`, SKIP_ON_FAILURE).
//!
//! Failures: the kernel carries a semaphore's failure as an errno, while the
//! HAL promises the status code and message it failed with. Both are kept
//! here (`semaphore.rs`): a failure the host caused is remembered, and one
//! that came from a queue is traced through the submissions that were to
//! signal the semaphore, to a device fault of their queue or to a failed
//! semaphore they waited on.

mod buffer;
mod device;
mod queue;
mod semaphore;
mod shadow;

pub(crate) use device::KmodDevice;
