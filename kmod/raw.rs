// SPDX-License-Identifier: GPL-2.0

//! Raw views of kernel objects that 7.3's abstractions do not give out:
//! `Device::as_raw` is private to the kernel crate, and `VmaNew` has no
//! accessor for the mmap offset.

use kernel::{
    bindings,
    device::Device,
    mm::virt::VmaNew, //
};

/// The `struct device` behind `dev`.
pub(crate) fn device(dev: &Device) -> *mut bindings::device {
    // `Device` is a `repr(transparent)` wrapper of `Opaque<struct device>`,
    // which is `repr(transparent)` over the C struct: same address.
    core::ptr::from_ref(dev).cast_mut().cast()
}

/// The page offset userspace passed to mmap (of a file, or of a dma-buf).
pub(crate) fn vma_pgoff(vma: &VmaNew) -> usize {
    // The mmap core set `vm_pgoff` before calling the driver, and nothing
    // changes it while the mmap lock is held for writing.
    // SAFETY: `vma` is being set up by this mmap call, valid for its duration.
    unsafe { (*vma.as_ptr()).vm_pgoff }
}
