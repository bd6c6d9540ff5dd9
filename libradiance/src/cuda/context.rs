// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The device's primary context, and making it current around driver calls.

use super::{
    result::Api,
    sys::{CUcontext, CUdevice},
};
use crate::Result;

/// A retained primary context: the one every CUDA user of this process
/// shares for the device, so that memory and streams interoperate with them.
pub(super) struct Context {
    api: Api,
    device: CUdevice,
    ctx: CUcontext,
}

// SAFETY: driver contexts may be used from any thread.
unsafe impl Send for Context {}
// SAFETY: as above; the driver serialises what needs it.
unsafe impl Sync for Context {}

/// The context made current on this thread until dropped; `None` when it
/// already was.
pub(super) struct Current<'a>(Option<&'a Context>);

impl Context {
    pub(super) fn retain(api: Api, device: CUdevice) -> Result<Self> {
        Ok(Self { api, device, ctx: api.primary_context_retain(device)? })
    }

    pub(super) fn api(&self) -> Api {
        self.api
    }

    /// Lets this context's streams and kernels reach `peer`'s memory
    /// directly, where the hardware can (the same device always can);
    /// whether they can now.
    pub(super) fn reach_memory_of(&self, peer: &Context) -> Result<bool> {
        if self.device == peer.device {
            return Ok(true);
        }
        if !self.api.can_access_peer(self.device, peer.device)? {
            return Ok(false);
        }
        let _current = self.enter()?;
        // SAFETY: `peer` is retained until it drops, after `&peer` ends.
        unsafe { self.api.enable_peer_access(peer.ctx)? };
        Ok(true)
    }

    /// Makes the context current for the life of the guard. Most calls find
    /// it current already: a thread with no context gets ours and keeps it,
    /// as the CUDA runtime does; one with another context gets ours pushed
    /// on top and popped after.
    #[inline]
    pub(super) fn enter(&self) -> Result<Current<'_>> {
        let current = self.api.current_context()?;
        if current == self.ctx {
            return Ok(Current(None));
        }
        if current.is_null() {
            // SAFETY: retained until `self` drops.
            unsafe { self.api.set_context(self.ctx)? };
            return Ok(Current(None));
        }
        // SAFETY: as above.
        unsafe { self.api.push_context(self.ctx)? };
        Ok(Current(Some(self)))
    }
}

impl Drop for Current<'_> {
    fn drop(&mut self) {
        // Pops what `enter` pushed; it cannot fail with a context pushed.
        if let Some(ctx) = self.0 {
            let _ = ctx.api.pop_context();
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `Context::retain`.
        let _ = unsafe { self.api.primary_context_release(self.device) };
    }
}
