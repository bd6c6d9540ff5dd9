// SPDX-License-Identifier: GPL-2.0

//! Raw views of kernel objects that 7.3's abstractions do not give out:
//! `Device::as_raw` is private to the kernel crate, `VmaNew` has no
//! accessor for the mmap offset, `Page` no atomic or byte access to memory
//! that userspace shares with the kernel, `Work` no flush,
//! `kernel::workqueue` no `system_dfl_wq`, and nothing asks `capable()`.

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
    workqueue::{
        DelayedWork,
        Queue,
        Work, //
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
pub(crate) fn page_atomic<T: AtomicType, R>(
    page: &Page,
    offset: usize,
    f: impl FnOnce(&Atomic<T>) -> R,
) -> Result<R> {
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

/// Copies `dst.len()` bytes at `offset` of `page` into `dst`; EINVAL if
/// they are not all inside the page.
///
/// For pages only a process writes, through its mapping, while the kernel
/// reads them (queue rings): what is read are plain bytes, which the caller
/// checks.
pub(crate) fn read_user_page(page: &Page, offset: usize, dst: &mut [u8]) -> Result {
    // SAFETY: `dst` is valid for `dst.len()` bytes; these pages are never written by Rust code,
    // only by a process through its own mapping, which only changes the bytes copied.
    unsafe { page.read_raw(dst.as_mut_ptr(), offset, dst.len()) }
}

/// Waits until the last queued run of `work` has finished.
pub(crate) fn flush_work<T: ?Sized, const ID: u64>(work: &Work<T, ID>) {
    // SAFETY: a `Work` can only be borrowed once it is pinned and
    // initialised, and the borrow keeps it alive for the call.
    unsafe { bindings::flush_work(Work::raw_get(work)) };
}

/// Runs a pending `work` now and waits until it has finished.
pub(crate) fn flush_delayed_work<T: ?Sized, const ID: u64>(work: &DelayedWork<T, ID>) {
    // A `delayed_work` starts with its `work_struct`, so a pointer to the
    // one is a pointer to the other.
    // SAFETY: as for `flush_work`: a borrowed `DelayedWork` is pinned,
    // initialised and alive for the call.
    unsafe { bindings::flush_delayed_work(DelayedWork::raw_as_work(work).cast()) };
}

/// The system's default unbound workqueue, `system_dfl_wq`. 7.3 deprecates
/// `system_unbound_wq` (what `workqueue::system_unbound()` returns) and warns
/// when work is first queued on it.
pub(crate) fn system_dfl() -> &'static Queue {
    // SAFETY: `system_dfl_wq` is created at boot, before any module can
    // load, and never destroyed.
    unsafe { Queue::from_raw(bindings::system_dfl_wq) }
}

/// Whether the current task may administer the system (CAP_SYS_ADMIN).
pub(crate) fn capable_sys_admin() -> bool {
    // SAFETY: `capable` only looks at the current task's credentials.
    unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as i32) }
}
