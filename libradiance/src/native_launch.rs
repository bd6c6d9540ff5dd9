// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The built-in kernels on a vendor GPU (the cuda and hsa backends): HAL
//! buffers get 32-bit device addresses, as on Radiance, and a launch of a
//! built-in becomes a launch of the vendor kernel with native pointers.
//!
//! Radiance kernels take u32 addresses, and the conformance suite checks
//! that buffers get them, so each buffer also gets an address in an emulated
//! 32-bit space ([`AddressSpace`]). [`NativeLaunch::translate`] checks a
//! launch as a Radiance device would run it (a bad entry PC, a parameter
//! block too short, an address in no buffer, misaligned or running past its
//! buffer), with the host backend's verdicts, and turns its addresses into
//! native pointers: a vendor kernel that faulted would poison the whole
//! context, so nothing bad ever reaches one.

use crate::{lock::lock, Error, Launch, Result};
use radiance_uapi::builtin;
use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, Weak},
};

/// What the built-ins take a pointer into: a buffer of a backend.
pub(crate) trait Addressed {
    /// Its size in bytes.
    fn size(&self) -> u64;
    /// The native device address of byte `offset`.
    fn native(&self, offset: u64) -> u64;
}

/// Where 32-bit device addresses start (zero stays unused, so that a null
/// pointer is in no buffer) and end (the built-in entry PCs lie above).
const FIRST_ADDRESS: u64 = 0x1000_0000;
const LAST_ADDRESS: u64 = 0xFFFF_0000;
const ADDRESS_ALIGN: u64 = 256;

/// The 32-bit device addresses of live objects of type `T`.
pub(crate) struct AddressSpace<T> {
    /// Base address to (size, object). Weak: an object removes itself when
    /// it goes.
    ranges: Mutex<BTreeMap<u64, (u64, Weak<T>)>>,
}

impl<T> Default for AddressSpace<T> {
    fn default() -> Self {
        Self { ranges: Mutex::default() }
    }
}

impl<T> AddressSpace<T> {
    /// Reserves the lowest free range of `size` bytes; [`AddressSpace::bind`]
    /// then names its object.
    pub(crate) fn reserve(&self, size: u64) -> Result<u64> {
        let mut ranges = lock(&self.ranges);
        // Candidate bases: the start of the space, and the aligned end of each
        // range; the first that fits before the next range wins.
        let ends = ranges.iter().map(|(base, (len, _))| (base + len).next_multiple_of(ADDRESS_ALIGN));
        let base = std::iter::once(FIRST_ADDRESS)
            .chain(ends)
            .find(|&b| {
                let end = b.saturating_add(size);
                end <= LAST_ADDRESS && ranges.range(..end).next_back().is_none_or(|(s, (l, _))| s + l <= b)
            })
            .ok_or_else(|| {
                Error::ResourceExhausted(format!("no {size}-byte range left in the 32-bit device address space"))
            })?;
        ranges.insert(base, (size, Weak::new()));
        Ok(base)
    }

    /// Names the object of a reserved range.
    pub(crate) fn bind(&self, base: u64, object: &Arc<T>) {
        if let Some(entry) = lock(&self.ranges).get_mut(&base) {
            entry.1 = Arc::downgrade(object);
        }
    }

    pub(crate) fn release(&self, base: u64) {
        lock(&self.ranges).remove(&base);
    }

    /// The live object holding `address`, and `address`'s offset in it.
    pub(crate) fn resolve(&self, address: u64) -> Option<(Arc<T>, u64)> {
        let ranges = lock(&self.ranges);
        let (base, (size, object)) = ranges.range(..=address).next_back()?;
        let offset = address - base;
        (offset < *size).then(|| object.upgrade().map(|o| (o, offset))).flatten()
    }
}

/// The index of SPIN among the built-ins, which backends keep in this order:
/// FILL_U32, COPY_U32, VECADD_U32, SPIN.
pub(crate) const SPIN: usize = 3;

/// A launch of a built-in, checked and translated.
pub(crate) struct NativeLaunch<B> {
    /// Which built-in: 0 FILL_U32, 1 COPY_U32, 2 VECADD_U32, [`SPIN`].
    pub(crate) kernel: usize,
    /// One 64-bit slot per kernel parameter: native pointers, counts; a u32
    /// parameter reads the low half of its slot (little-endian).
    pub(crate) args: [u64; 4],
    /// How many of `args` the kernel takes.
    pub(crate) count: usize,
    /// The buffers it touches, to keep alive until the launch is done.
    pub(crate) buffers: Vec<Arc<B>>,
}

impl<B: Addressed> NativeLaunch<B> {
    /// Checks `launch` as a Radiance device would run it and translates its
    /// addresses through `space`; `closing` is the native address of the
    /// queue's word that stops SPIN.
    #[inline(always)]
    pub(crate) fn translate(space: &AddressSpace<B>, closing: u64, launch: &Launch) -> Result<Self> {
        let mut k = Translator { space, launch, buffers: Vec::new() };
        // The built-in start code runs the kernel at `kernel_pc`.
        let (kernel, args, count) = match launch.kernel() {
            builtin::FILL_U32 => {
                let [dst, value, count] = k.params()?;
                let n = k.elements(count);
                (0, [k.locate(dst, n)?, value.into(), n.into(), 0], 3)
            }
            builtin::COPY_U32 => {
                let [dst, src, count] = k.params()?;
                let n = k.elements(count);
                // Sources are checked before targets, as the host runs them.
                let src = k.locate(src, n)?;
                (1, [k.locate(dst, n)?, src, n.into(), 0], 3)
            }
            builtin::VECADD_U32 => {
                let [a, b, c, count] = k.params()?;
                let n = k.elements(count);
                let (a, b) = (k.locate(a, n)?, k.locate(b, n)?);
                (2, [a, b, k.locate(c, n)?, n.into()], 4)
            }
            builtin::SPIN => (SPIN, [closing, 0, 0, 0], 1),
            _ => return Err(k.bad_pc()),
        };
        Ok(Self { kernel, args, count, buffers: k.buffers })
    }
}

/// Checks a launch's parameters the way the host backend's kernels do.
struct Translator<'a, B> {
    space: &'a AddressSpace<B>,
    launch: &'a Launch,
    buffers: Vec<Arc<B>>,
}

impl<B: Addressed> Translator<'_, B> {
    fn fault(&self, thread: u64, why: String) -> Error {
        Error::DeviceFault { pc: self.launch.kernel(), thread, why }
    }

    // The faults a launch's parameters are checked for before they are
    // read: out of line and cold, so that a launch that passes runs
    // straight through its checks.

    #[cold]
    #[inline(never)]
    fn bad_pc(&self) -> Error {
        self.fault(0, "no kernel at this entry PC (bad PC)".into())
    }

    #[cold]
    #[inline(never)]
    fn short_params(&self, reads: usize) -> Error {
        let has = self.launch.params.len();
        self.fault(0, format!("the parameter block has {has} bytes; this built-in reads {reads}"))
    }

    /// The first `N` little-endian u32 parameters.
    #[inline]
    fn params<const N: usize>(&self) -> Result<[u32; N]> {
        let p = &self.launch.params;
        if p.len() < N * 4 {
            return Err(self.short_params(N * 4));
        }
        let mut words = [0; N];
        for (w, b) in words.iter_mut().zip(p.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(words)
    }

    /// Elements the grid touches: one per thread, at most `count`.
    fn elements(&self, count: u32) -> u32 {
        // At most `count`, so it fits.
        self.launch.threads().min(count.into()) as u32
    }

    /// The native pointer for `n` u32 elements at device address `address`;
    /// its buffer is kept for the launch. No elements, no access: any
    /// address will do, as on the device. That test is inlined (an empty
    /// launch is the one that measures a backend's own cost per launch),
    /// the lookup not.
    #[inline(always)]
    fn locate(&mut self, address: u32, n: u32) -> Result<u64> {
        if n == 0 {
            return Ok(0);
        }
        self.resolve(address, n)
    }

    /// [`Translator::locate`] of at least one element.
    #[inline(never)]
    fn resolve(&mut self, address: u32, n: u32) -> Result<u64> {
        if address % 4 != 0 {
            return Err(self.fault(0, format!("misaligned u32 address {address:#x}")));
        }
        let (buffer, offset) = self
            .space
            .resolve(address.into())
            .ok_or_else(|| self.fault(0, format!("address {address:#x} is in no buffer")))?;
        let fit = (buffer.size() - offset) / 4;
        if u64::from(n) > fit {
            let bad = u64::from(address) + fit * 4;
            return Err(self.fault(fit, format!("address {bad:#x} is past the end of its buffer")));
        }
        let ptr = buffer.native(offset);
        self.buffers.push(buffer);
        Ok(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_lowest_fit_and_never_overlap() {
        let space = AddressSpace::<()>::default();
        let a = space.reserve(100).unwrap();
        let b = space.reserve(1000).unwrap();
        let c = space.reserve(10).unwrap();
        assert_eq!((a, b, c), (FIRST_ADDRESS, FIRST_ADDRESS + 256, FIRST_ADDRESS + 1280));
        space.release(b);
        // A smaller range reuses the hole; a larger one goes past the end.
        assert_eq!(space.reserve(4000).unwrap(), FIRST_ADDRESS + 1536);
        assert_eq!(space.reserve(500).unwrap(), FIRST_ADDRESS + 256);
        let object = Arc::new(());
        space.bind(c, &object);
        assert_eq!(space.resolve(c + 9).map(|(_, o)| o), Some(9));
        assert!(space.resolve(c + 10).is_none());
        assert!(space.resolve(0).is_none());
        assert!(space.reserve(LAST_ADDRESS).is_err());
    }
}
