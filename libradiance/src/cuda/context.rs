// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The device's primary context, and making it current around driver calls.

use super::{
    result::Api,
    sys::{CUcontext, CUdevice, CUevent, CUstream},
};
use crate::Result;

/// A retained primary context: the one every CUDA user of this process
/// shares for the device, so that memory and streams interoperate with them.
pub(super) struct Context {
    api: Api,
    device: CUdevice,
    ctx: CUcontext,
    /// Whether the driver takes the context of a call on a stream or an
    /// event from that stream or event, so that the submission path need
    /// not ask which context is current ([`Context::enter_for_streams`]):
    /// asking costs as much as a tenth of an edge between queues on some of
    /// the H100 machine's CPUs. Found out once, when the device opens
    /// ([`Context::learn_whether_streams_carry_it`]).
    streams_carry_it: bool,
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
        Ok(Self { api, device, ctx: api.primary_context_retain(device)?, streams_carry_it: false })
    }

    /// Runs `calls` with a new stream and event of this context on a thread
    /// of its own, where no context is current: if they succeed, the driver
    /// takes the context of such calls from their stream and event (as
    /// CUDA 13's does), and [`Context::enter_for_streams`] makes none
    /// current from now on.
    pub(super) fn learn_whether_streams_carry_it(
        &mut self,
        calls: impl FnOnce(Api, CUstream, CUevent) -> Result<()> + Send,
    ) -> Result<()> {
        let api = self.api;
        let carried = {
            let _current = self.enter()?;
            let stream = api.stream_create()?;
            let event = api.event_create();
            let carried = event.as_ref().is_ok_and(|&event| {
                // Handles are plain numbers to the thread: the driver's
                // objects may be used from any thread.
                let (stream, event) = (stream as usize, event as usize);
                let calls = move || calls(api, stream as CUstream, event as CUevent);
                std::thread::scope(|scope| scope.spawn(calls).join()).is_ok_and(|done| done.is_ok())
            });
            // SAFETY: the stream and event are this function's, and the
            // stream has finished what the calls queued before they go.
            unsafe {
                let _ = api.stream_synchronize(stream);
                if let Ok(event) = event {
                    let _ = api.event_destroy(event);
                }
                let _ = api.stream_destroy(stream);
            }
            event.map(|_| carried)?
        };
        self.streams_carry_it = carried;
        Ok(())
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

    /// [`Context::enter`] for driver calls that name a stream or an event
    /// of this context (launches, event records and stream waits, queries):
    /// nothing at all where the driver takes the context from them.
    /// Inlined as far as the test: where the driver asks for the context,
    /// [`Context::enter`] is called out of line.
    #[inline(always)]
    pub(super) fn enter_for_streams(&self) -> Result<Current<'_>> {
        #[inline(never)]
        fn enter(ctx: &Context) -> Result<Current<'_>> {
            ctx.enter()
        }
        if self.streams_carry_it {
            return Ok(Current(None));
        }
        enter(self)
    }
}

impl Drop for Current<'_> {
    /// Inlined: most guards pushed nothing, and every launch drops one.
    #[inline(always)]
    fn drop(&mut self) {
        #[inline(never)]
        fn pop(ctx: &Context) {
            // It cannot fail with a context pushed.
            let _ = ctx.api.pop_context();
        }
        // Pops what `enter` pushed.
        if let Some(ctx) = self.0 {
            pop(ctx);
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `Context::retain`.
        let _ = unsafe { self.api.primary_context_release(self.device) };
    }
}
