// SPDX-License-Identifier: GPL-2.0

//! dma_fence: fences the driver creates and signals itself (a semaphore
//! reaching a value), and references to anyone's fences.
//!
//! 7.3 has no Rust abstraction for dma_fence; this file is the small wrapper
//! over `kernel::bindings`. Our fences are bare `struct dma_fence`s from
//! kmalloc with no `release` op, so the core frees them with `kfree_rcu`
//! after the last reference, as fences read under RCU must be.

use core::ptr::{
    null_mut,
    NonNull, //
};
use kernel::{
    bindings,
    prelude::*,
    types::Opaque, //
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
        let raw = KBox::into_raw(KBox::new(Opaque::<bindings::dma_fence>::zeroed(), GFP_KERNEL)?);
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
