// SPDX-License-Identifier: GPL-2.0

//! dma_fence: fences the driver creates and signals itself (a semaphore
//! reaching a value), references to anyone's fences, and work that runs
//! once a fence signals.
//!
//! 7.3 has no Rust abstraction for dma_fence; this file is the small wrapper
//! over `kernel::bindings`, and imports nothing else of the driver. Our
//! fences are bare `struct dma_fence`s from kmalloc with no `release` op, so
//! the core frees them with `kfree_rcu` after the last reference, as fences
//! read under RCU must be.

use core::ptr::{
    null_mut,
    NonNull, //
};
use kernel::{
    bindings,
    error::to_result,
    prelude::*,
    sync::Arc,
    types::Opaque,
    workqueue::{
        impl_has_work,
        new_work,
        Work,
        WorkItem, //
    },
};

/// `get_driver_name`.
///
/// # Safety
///
/// Called by the dma_fence core for one of our fences.
unsafe extern "C" fn driver_name(_fence: *mut bindings::dma_fence) -> *const c_char {
    c"radiance".as_char_ptr()
}

/// `get_timeline_name`: every semaphore is a timeline.
///
/// # Safety
///
/// Called by the dma_fence core for one of our fences.
unsafe extern "C" fn timeline_name(_fence: *mut bindings::dma_fence) -> *const c_char {
    c"semaphore".as_char_ptr()
}

static OPS: bindings::dma_fence_ops = bindings::dma_fence_ops {
    get_driver_name: Some(driver_name),
    get_timeline_name: Some(timeline_name),
    // Signalling is always on: the driver signals from its own signal path.
    enable_signaling: None,
    signaled: None,
    wait: None,
    // The core's default frees the kmalloc'ed fence after an RCU grace period.
    release: None,
    set_deadline: None,
};

/// A counted reference to a `struct dma_fence`.
///
/// # Invariants
///
/// `self.0` points to a live fence and we own one reference to it.
pub(crate) struct Fence(NonNull<bindings::dma_fence>);

// SAFETY: fence references may be taken, used and dropped on any thread.
unsafe impl Send for Fence {}
// SAFETY: `&Fence` only calls thread-safe dma_fence functions.
unsafe impl Sync for Fence {}

impl Fence {
    /// A fence context: each semaphore is one timeline.
    pub(crate) fn new_context() -> u64 {
        // SAFETY: no preconditions.
        unsafe { bindings::dma_fence_context_alloc(1) }
    }

    /// A new, unsignalled fence of ours at `seqno` on `context`.
    pub(crate) fn new(context: u64, seqno: u64) -> Result<Self> {
        let raw = KBox::into_raw(KBox::new(
            Opaque::<bindings::dma_fence>::zeroed(),
            GFP_KERNEL,
        )?);
        let fence = raw.cast::<bindings::dma_fence>();
        // SAFETY: `fence` is fresh zeroed kmalloc memory for a fence; `OPS`
        // is static; a NULL lock asks for the fence's own inline lock.
        unsafe { bindings::dma_fence_init64(fence, &OPS, null_mut(), context, seqno) };
        // INVARIANT: initialised with one reference, which is ours.
        // SAFETY: `KBox::into_raw` never returns null.
        Ok(Self(unsafe { NonNull::new_unchecked(fence) }))
    }

    /// Takes over a reference the caller owns.
    ///
    /// # Safety
    ///
    /// `fence` is live and the caller gives us one reference to it.
    pub(crate) unsafe fn from_raw(fence: NonNull<bindings::dma_fence>) -> Self {
        // INVARIANT: the caller's promise.
        Self(fence)
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::dma_fence {
        self.0.as_ptr()
    }

    /// The error a signalled fence failed with; `None` if it succeeded or
    /// has not signalled.
    pub(crate) fn error(&self) -> Option<Error> {
        // SAFETY: the fence is live.
        let status = unsafe { bindings::dma_fence_get_status(self.as_raw()) };
        (status < 0).then(|| Error::from_errno(status))
    }

    /// Signals the fence, with `error` (a negative errno) when the point
    /// will never be reached. Signalling twice is harmless.
    pub(crate) fn signal(&self, error: Option<Error>) {
        if let Some(e) = error {
            // What `dma_fence_set_error` (inline C) does: before signalling.
            // SAFETY: the fence is live; nobody else writes `error` of our
            // fences, and the core reads it only once signalled.
            unsafe { (*self.as_raw()).error = e.to_errno() };
        }
        // SAFETY: the fence is live.
        unsafe { bindings::dma_fence_signal(self.as_raw()) };
    }
}

impl Clone for Fence {
    fn clone(&self) -> Self {
        // SAFETY: the fence is live; `dma_fence_get` is this (inline C).
        unsafe { bindings::refcount_inc(&raw mut (*self.as_raw()).refcount.refcount) };
        // INVARIANT: the reference just taken is the new object's.
        Self(self.0)
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        let fence = self.as_raw();
        // What `dma_fence_put` (inline C) does with our reference.
        // SAFETY: we own a reference to a live fence.
        unsafe {
            if bindings::refcount_dec_and_test(&raw mut (*fence).refcount.refcount) {
                bindings::dma_fence_release(&raw mut (*fence).refcount);
            }
        }
    }
}

/// What runs, in process context, once a fence signals.
pub(crate) trait OnSignal: Send + Sync + Sized + 'static {
    /// `callback`'s fence signalled, with its error if it failed.
    fn signalled(callback: Arc<FenceCallback<Self>>, error: Option<Error>);
}

/// Runs `T::signalled` once `fence` signals. Fence callbacks run in atomic
/// context, possibly under locks of another driver, so the callback only
/// queues a work item, which calls `T::signalled`. The callback holds a
/// reference to the whole object: leaked when armed, taken back by the
/// callback, or by [`FenceCallback::cancel`] if it never runs.
#[pin_data]
pub(crate) struct FenceCallback<T: OnSignal> {
    #[pin]
    cb: Opaque<bindings::dma_fence_cb>,
    #[pin]
    work: Work<FenceCallback<T>>,
    fence: Fence,
    data: T,
}

impl_has_work! {
    impl{T: OnSignal} HasWork<Self> for FenceCallback<T> { self.work }
}

// SAFETY: `cb` is only touched by the dma_fence core (under the fence's
// lock) and through the core's API in `arm` and `cancel`; the rest is
// `Send` (`T: Send`, and `Fence`).
unsafe impl<T: OnSignal> Send for FenceCallback<T> {}
// SAFETY: `&FenceCallback` gives no unsynchronised access to `cb` (only
// the dma_fence core touches it, under the fence's lock, and `arm` and
// `cancel` go through the core's API), `Fence` is `Sync`, and `T: Sync`.
unsafe impl<T: OnSignal> Sync for FenceCallback<T> {}

impl<T: OnSignal> FenceCallback<T> {
    /// A callback for `fence`, not armed yet.
    pub(crate) fn new(fence: Fence, data: T) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                cb: Opaque::zeroed(),
                work <- new_work!("FenceCallback::work"),
                fence,
                data,
            }),
            GFP_KERNEL,
        )
    }

    pub(crate) fn data(&self) -> &T {
        &self.data
    }

    /// Arms the callback. A fence that has signalled already runs
    /// `T::signalled` here, at once. Arm a callback once.
    pub(crate) fn arm(this: &Arc<Self>) -> Result {
        let leaked = Arc::into_raw(this.clone());
        // SAFETY: the fence is live; `cb` lives as long as the object, which the leaked reference
        // keeps alive until the callback or `cancel` takes it back.
        let armed = to_result(unsafe {
            bindings::dma_fence_add_callback(
                this.fence.as_raw(),
                this.cb.get(),
                Some(fence_signalled::<T>),
            )
        });
        match armed {
            Ok(()) => Ok(()),
            Err(e) => {
                // SAFETY: the callback was not added, so the reference is
                // ours again.
                drop(unsafe { Arc::from_raw(leaked) });
                // ENOENT: signalled already.
                if e != ENOENT {
                    return Err(e);
                }
                T::signalled(this.clone(), this.fence.error());
                Ok(())
            }
        }
    }

    /// Disarms a callback whose fence has not signalled. False if too
    /// late: the callback ran, and its work calls (or called)
    /// `T::signalled`.
    pub(crate) fn cancel(this: &Arc<Self>) -> bool {
        // SAFETY: the fence and `cb` are live while `this` is.
        let removed =
            unsafe { bindings::dma_fence_remove_callback(this.fence.as_raw(), this.cb.get()) };
        if removed {
            // SAFETY: the callback will never run, so the reference it
            // held (leaked in `arm`) is ours.
            drop(unsafe { Arc::from_raw(Arc::as_ptr(this)) });
        }
        removed
    }

    /// Waits until the work of a callback that fired has returned.
    pub(crate) fn flush(this: &Arc<Self>) {
        crate::raw::flush_work(&this.work);
    }
}

/// The fence signalled: hand the callback to process context.
///
/// # Safety
///
/// Called by the dma_fence core once, for a callback added by
/// [`FenceCallback::arm`].
unsafe extern "C" fn fence_signalled<T: OnSignal>(
    _fence: *mut bindings::dma_fence,
    cb: *mut bindings::dma_fence_cb,
) {
    let cb = cb.cast::<Opaque<bindings::dma_fence_cb>>();
    // SAFETY: `cb` is the `cb` field of a `FenceCallback<T>`: only `arm` adds this function, with
    // its own `cb`.
    let this = unsafe { kernel::container_of!(cb, FenceCallback<T>, cb) };
    // SAFETY: `arm` leaked a reference to the object for this callback, which runs once.
    let this = unsafe { Arc::from_raw(this.cast_const()) };
    // An armed callback fires once, and its work is queued only here, so
    // it is never queued already.
    let _ = crate::raw::system_dfl().enqueue(this);
}

impl<T: OnSignal> WorkItem for FenceCallback<T> {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        let error = this.fence.error();
        crate::kcov::work(|| T::signalled(this, error));
    }
}
