// SPDX-License-Identifier: GPL-2.0

//! Radiance GPU driver.
//!
//! Each Radiance device is a misc device `/dev/radianceN` whose ioctls give
//! processes buffer objects, user-mode queues and timeline semaphores. The
//! hardware behind a device is reached only through the [`hw::Gluon`] trait,
//! so the emulated device used in QEMU runs the same driver core as a board.

use kernel::prelude::*;

// The driver's objects: devices and their nodes, each process's file, and
// what a file holds.
mod bo;
mod control;
mod device;
mod driver;
mod file;
mod ioctl;
mod queue;
mod sem_import;
mod semaphore;
mod vram;

// Scheduling: queues multiplexed onto the device's streams, and packets
// translated into Gluon commands.
mod scheduler;
mod staging;
mod trace;
mod translate;

// The hardware seam and its backends.
mod hw;

// Plain data structures, tested with KUnit.
mod fifo;
mod lazy_vec;
mod ring;

// Safe wrappers over `kernel::bindings` where 7.3 has no abstraction: the
// only files that hold `unsafe` but for the few the policy names
// (tools/check-unsafe-files.sh). Their names are used from the root.
mod wrappers;
use wrappers::{
    dma_buf,
    dma_fence,
    host_mem,
    kcov,
    misc_node,
    pending_fd,
    raw,
    sg_table,
    sleep_lock,
    sync_file, //
};

// Gluon's wire formats and the shared device model: the top-level `gluon`
// crate (`no_std`, tested on the host), included as a module like the uapi.
#[allow(unreachable_pub, dead_code, unused_attributes)]
#[path = "../gluon/src/lib.rs"]
mod gluon;

// The ABI shared with userspace: the kernel cannot take crates.io crates, so
// the uapi crate's one file is included as a module. Not every constant of
// the ABI is used on this side.
#[allow(unreachable_pub, dead_code, unused_attributes)]
#[path = "../uapi/src/lib.rs"]
mod uapi;

module! {
    type: driver::Radiance,
    name: "radiance",
    authors: ["The Radiance driver authors"],
    description: "Radiance GPU driver (Gluon command processor)",
    license: "GPL",
    imports_ns: ["DMA_BUF"],
    params: {
        emulated_devices: u32 {
            default: 1,
            description: "Emulated Radiance devices to create (0 to 8)",
        },
        emulated_vram_mib: u32 {
            default: 256,
            description: "VRAM of each emulated device, in MiB",
        },
        max_pinned_mib: u32 {
            default: 512,
            description: "Most host memory, in MiB, that each device pins for HOST buffer objects",
        },
        launch_timeout_ms: u32 {
            default: 2000,
            description: "A command that makes no progress for this long resets the device and faults its queue",
        },
        exclusive: bool {
            default: false,
            description: "One open file per device at a time (kernels cannot be isolated from each other)",
        },
        emulated_dialect: u32 {
            default: 1,
            description: "Wire format of the emulated devices: 1 gluon-sim-16, 2 gluon-24",
        },
        emulated_throttle_us: u32 {
            default: 0,
            description: "Debug: microseconds the emulated devices sleep after each 64 KiB or 1024 threads of a command, to stand for a slow device",
        },
        emulated_gluon_sim: bool {
            default: false,
            description: "Emulated devices implement only what gluon-sim e554ff7 does (no SET, FENCE, device-to-device copy or counters; 4-byte accesses; one command per stream)",
        },
    },
}
