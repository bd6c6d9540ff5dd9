// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over `kernel::bindings`, for what Linux 7.3 gives a Rust
//! module no abstraction for: each file is a leaf that imports no driver
//! type, only other wrappers, and holds every `unsafe` block of its concern,
//! each with its `// SAFETY:` argument. Outside this folder only the files
//! that `tools/check-unsafe-files.sh` names may hold `unsafe`.

pub(crate) mod dma_buf;
pub(crate) mod dma_device;
pub(crate) mod dma_fence;
pub(crate) mod host_map;
pub(crate) mod host_mem;
pub(crate) mod kcov;
pub(crate) mod misc_node;
pub(crate) mod pending_fd;
pub(crate) mod raw;
pub(crate) mod sg_table;
pub(crate) mod sleep_lock;
pub(crate) mod sync_file;
pub(crate) mod trace;
