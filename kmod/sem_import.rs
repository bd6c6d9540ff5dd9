// SPDX-License-Identifier: GPL-2.0

//! A semaphore point that waits for an outside fence (SEM_IMPORT_SYNC_FILE):
//! when the fence signals, the semaphore advances to the point, or fails with
//! the fence's error.
//!
//! Fence callbacks run in atomic context, possibly under locks of another
//! driver, so the callback only queues a work item; the work takes the
//! semaphore lock. The callback holds a reference to its import (leaked into
//! the callback and taken back by it, or by `cancel` if it never runs).

use kernel::{
    bindings,
    error::to_result,
    prelude::*,
    sync::Arc,
    types::Opaque,
    workqueue::{
        self,
        impl_has_work,
        new_work,
        Work,
        WorkItem, //
    },
};

use crate::{
    dma_fence::Fence,
    semaphore::Semaphores, //
};

/// One pending import.
#[pin_data]
pub(crate) struct FenceImport {
    #[pin]
    cb: Opaque<bindings::dma_fence_cb>,
    #[pin]
    work: Work<FenceImport>,
    fence: Fence,
    sems: Arc<Semaphores>,
    handle: u32,
    value: u64,
}

impl_has_work! {
    impl HasWork<Self> for FenceImport { self.work }
}

// SAFETY: `cb` is only touched by the dma_fence core (under the fence's
// lock) and by `start`/`cancel` through the core's API; everything else is
// thread-safe.
unsafe impl Send for FenceImport {}
// SAFETY: as above: `&FenceImport` gives no unsynchronised access to `cb`.
unsafe impl Sync for FenceImport {}

impl FenceImport {
    /// Arms an import: semaphore `handle` of `sems` advances to `value` when
    /// `fence` signals. A fence that has signalled already applies at once.
    pub(crate) fn start(sems: &Arc<Semaphores>, handle: u32, value: u64, fence: Fence) -> Result {
        let import = Arc::pin_init(
            pin_init!(Self {
                cb: Opaque::zeroed(),
                work <- new_work!("FenceImport::work"),
                fence,
                sems: sems.clone(),
                handle,
                value,
            }),
            GFP_KERNEL,
        )?;
        sems.track_import(import.clone())?;
        let leaked = Arc::into_raw(import.clone());
        // `cb` lives as long as the import, which the leaked reference keeps
        // until the callback or `cancel` takes it back.
        // SAFETY: the fence is live, and `cb` as above.
        let armed = to_result(unsafe {
            bindings::dma_fence_add_callback(import.fence.as_raw(), import.cb.get(), Some(fence_signalled))
        });
        if let Err(e) = armed {
            // SAFETY: the callback was not added, so the reference is ours.
            drop(unsafe { Arc::from_raw(leaked) });
            if e != ENOENT {
                sems.untrack_import(&import);
                return Err(e);
            }
            // ENOENT: signalled already.
            <Self as WorkItem>::run(import);
        }
        Ok(())
    }

    /// Stops an import whose fence has not signalled (the file is
    /// closing). False if too late: the callback ran, and its work will
    /// finish the import.
    pub(crate) fn cancel(this: &Arc<Self>) -> bool {
        // SAFETY: the fence and `cb` are live while `this` is.
        let removed = unsafe { bindings::dma_fence_remove_callback(this.fence.as_raw(), this.cb.get()) };
        if removed {
            // SAFETY: the callback will never run, so its reference is ours.
            drop(unsafe { Arc::from_raw(Arc::as_ptr(this)) });
        }
        removed
    }

    /// Waits until the work of an import whose callback fired has run to
    /// its end.
    pub(crate) fn flush(this: &Arc<Self>) {
        // SAFETY: `work` is initialised and lives as long as `this`.
        unsafe { bindings::flush_work(Work::raw_get(&this.work)) };
    }
}

/// The fence signalled: hand the import to process context.
///
/// # Safety
///
/// Called by the dma_fence core once, for a callback added by `start`.
unsafe extern "C" fn fence_signalled(_fence: *mut bindings::dma_fence, cb: *mut bindings::dma_fence_cb) {
    let cb = cb.cast::<Opaque<bindings::dma_fence_cb>>();
    // SAFETY: `cb` is the `cb` field of a `FenceImport` whose leaked
    // reference this callback now takes back.
    let import = unsafe { Arc::from_raw(kernel::container_of!(cb, FenceImport, cb).cast_const()) };
    // A fresh import is never queued twice, so this cannot fail.
    let _ = workqueue::system_unbound().enqueue(import);
}

impl WorkItem for FenceImport {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        // SAFETY: the fence is live (we hold a reference).
        let status = unsafe { bindings::dma_fence_get_status(this.fence.as_raw()) };
        let error = (status < 0).then(|| Error::from_errno(status));
        this.sems.complete_import(this.handle, this.value, error);
        this.sems.untrack_import(&this);
    }
}
