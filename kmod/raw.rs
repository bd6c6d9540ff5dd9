// SPDX-License-Identifier: GPL-2.0

//! Raw views of kernel objects that 7.3's abstractions do not give out:
//! `Device::as_raw` is private to the kernel crate, `VmaNew` has no
//! accessor for the mmap offset, and `Page` no atomic access to words that
//! userspace shares with the kernel.

use kernel::{
    bindings,
    device::Device,
    error::{
        code::EINVAL,
        Result, //
    },
    mm::virt::VmaNew,
    page::{
        Page,
        PAGE_SIZE, //
    },
    sync::atomic::{
        Atomic,
        AtomicType, //
    },
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

/// Runs `f` on the naturally aligned `T` at byte `offset` of `page`, as an
/// atomic: for words a process reads or writes through its own mapping of
/// the page at the same time (semaphore values, queue control blocks).
/// EINVAL if `offset` is misaligned or out of the page.
pub(crate) fn page_atomic<T: AtomicType, R>(page: &Page, offset: usize, f: impl FnOnce(&Atomic<T>) -> R) -> Result<R> {
    let size = core::mem::size_of::<T>();
    if offset % size != 0 || offset + size > PAGE_SIZE {
        return Err(EINVAL);
    }
    // `offset` is in bounds and aligned (checked above), and every access
    // to the word is atomic.
    // SAFETY: the page is live; `kmap_local_page` maps it until unmapped.
    unsafe {
        let base = bindings::kmap_local_page(page.as_ptr()).cast::<u8>();
        let r = f(Atomic::from_ptr(base.add(offset).cast::<T>()));
        bindings::kunmap_local(base.cast());
        Ok(r)
    }
}
