// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The built-in kernels of `radiance_uapi::builtin`, run on the CPU exactly
//! as the emulated Gluon runs them: thread `t` of the grid handles element
//! `t`, buffers are found by their u32 device addresses, and anything a
//! device would fault on (a bad entry PC, an address outside every buffer, a
//! misaligned address, a parameter block too short) fails the launch with
//! [`Error::DeviceFault`] naming the PC and the first faulting thread.

use super::{
    buffer::{AddressSpace, HostBuffer},
    semaphore::Hub,
};
use crate::{backend::BackendBuffer, buffer::u32s_from_le, Error, Launch, Result};
use radiance_uapi::builtin;
use std::sync::{atomic::AtomicBool, Arc};

/// What a running launch needs from its queue and device.
pub(super) struct Context<'a> {
    pub(super) space: &'a AddressSpace,
    pub(super) hub: &'a Hub,
    /// Set when the queue is destroyed: SPIN's only way out.
    pub(super) closing: &'a AtomicBool,
}

/// Runs `launch` to completion.
pub(super) fn run(cx: &Context<'_>, launch: &Launch) -> Result<()> {
    let k = Kernel { cx, launch };
    // The built-in start code runs the kernel at `kernel_pc`.
    match launch.kernel() {
        builtin::FILL_U32 => {
            let [dst, value, count] = k.params()?;
            k.write(dst, k.elements(count), std::iter::repeat(value))
        }
        builtin::COPY_U32 => {
            let [dst, src, count] = k.params()?;
            let n = k.elements(count);
            k.write(dst, n, k.read(src, n)?)
        }
        builtin::VECADD_U32 => {
            let [a, b, c, count] = k.params()?;
            let n = k.elements(count);
            let (a, b) = (k.read(a, n)?, k.read(b, n)?);
            k.write(c, n, a.iter().zip(b).map(|(x, y)| x.wrapping_add(y)))
        }
        builtin::SPIN => {
            cx.hub.park_until(cx.closing);
            Err(Error::Cancelled("the queue was destroyed while a launch was running".into()))
        }
        _ => Err(k.fault(0, "no kernel at this entry PC (bad PC)".into())),
    }
}

struct Kernel<'a> {
    cx: &'a Context<'a>,
    launch: &'a Launch,
}

impl Kernel<'_> {
    fn fault(&self, thread: u64, why: String) -> Error {
        Error::DeviceFault { pc: self.launch.kernel(), thread, why }
    }

    /// The first `N` little-endian u32 parameters.
    fn params<const N: usize>(&self) -> Result<[u32; N]> {
        let p = &self.launch.params;
        let short =
            || self.fault(0, format!("the parameter block has {} bytes; this built-in reads {}", p.len(), N * 4));
        let words = u32s_from_le(p.get(..N * 4).ok_or_else(short)?);
        words.try_into().map_err(|_| short())
    }

    /// Elements the grid touches: one per thread, at most `count`.
    fn elements(&self, count: u32) -> usize {
        let n = self.launch.threads().min(u64::from(count));
        // `n` fits: it is at most a u32.
        usize::try_from(n).unwrap_or(usize::MAX)
    }

    /// The buffer and offset of `n` u32 elements at device address `address`.
    fn locate(&self, address: u32, n: usize) -> Result<(Arc<HostBuffer>, u64)> {
        if address % 4 != 0 {
            return Err(self.fault(0, format!("misaligned u32 address {address:#x}")));
        }
        let (buffer, offset) = self
            .cx
            .space
            .resolve(address.into())
            .ok_or_else(|| self.fault(0, format!("address {address:#x} is in no buffer")))?;
        let fit = (buffer.size() - offset) / 4;
        if n as u64 > fit {
            let bad = u64::from(address) + fit * 4;
            return Err(self.fault(fit, format!("address {bad:#x} is past the end of its buffer")));
        }
        Ok((buffer, offset))
    }

    fn read(&self, address: u32, n: usize) -> Result<Vec<u32>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let (buffer, offset) = self.locate(address, n)?;
        let mut bytes = vec![0; n * 4];
        buffer.read(offset, &mut bytes)?;
        Ok(u32s_from_le(&bytes))
    }

    /// Writes the first `n` of `values` at device address `address`.
    fn write(&self, address: u32, n: usize, values: impl IntoIterator<Item = u32>) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        // Located first, so that a bad address faults before anything is made.
        let (buffer, offset) = self.locate(address, n)?;
        let bytes: Vec<u8> = values.into_iter().take(n).flat_map(u32::to_le_bytes).collect();
        buffer.write(offset, &bytes)
    }
}
