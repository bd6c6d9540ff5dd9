// SPDX-License-Identifier: GPL-2.0 OR MIT

//! AQL packets and how they are published on a queue's ring.
//!
//! A packet is 64 bytes; its first 16 bits, the header, say what it is, and
//! the packet processor reads the rest only once the header is no longer
//! INVALID. So the body is written first and the header word (header and
//! setup, or header and AMD format) last, by one 32-bit atomic store with
//! release order; then the doorbell signal gets the packet's index. Every
//! packet this backend writes has the barrier bit (a queue runs its packets
//! in order, like a CUDA stream) and system-scope acquire and release
//! fences (buffers may be host memory the CPU reads).
//!
//! Pure encoding: `queue.rs` owns the ring memory and the indices.

use super::sys::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// A packet as the ring holds it: word 0 is the header word, published
/// last.
pub(super) type Words = [u32; 16];

/// The header of a packet of `kind` with the barrier bit and system-scope
/// fences.
pub(super) const fn header(kind: u16) -> u16 {
    kind << HSA_PACKET_HEADER_TYPE
        | 1 << HSA_PACKET_HEADER_BARRIER
        | HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE
        | HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE
}

/// The words of a 64-byte packet struct.
fn words<T: Copy>(packet: &T) -> Words {
    const { assert!(std::mem::size_of::<T>() == 64) };
    let mut words = [0u32; 16];
    // SAFETY: `T` is one of sys.rs's 64-byte `repr(C)` packets (all plain
    // integers, no padding), so its bytes are 16 initialised words.
    unsafe { std::ptr::copy_nonoverlapping((packet as *const T).cast::<u32>(), words.as_mut_ptr(), 16) };
    words
}

/// What a dispatch runs: a kernel of a loaded executable.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct KernelObject {
    pub(super) object: u64,
    pub(super) kernarg_size: u32,
    pub(super) group_segment_size: u32,
    pub(super) private_segment_size: u32,
}

/// A kernel dispatch of `grid` work-items in workgroups of `workgroup`
/// (both x, y, z), reading its arguments at `kernarg`.
pub(super) fn dispatch(
    kernel: &KernelObject,
    grid: [u32; 3],
    workgroup: [u16; 3],
    kernarg: u64,
    completion: hsa_signal_t,
) -> Words {
    let dimensions = if grid[2] > 1 || workgroup[2] > 1 {
        3
    } else if grid[1] > 1 || workgroup[1] > 1 {
        2
    } else {
        1
    };
    words(&hsa_kernel_dispatch_packet_t {
        header: header(HSA_PACKET_TYPE_KERNEL_DISPATCH),
        setup: dimensions << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
        workgroup_size_x: workgroup[0],
        workgroup_size_y: workgroup[1],
        workgroup_size_z: workgroup[2],
        grid_size_x: grid[0],
        grid_size_y: grid[1],
        grid_size_z: grid[2],
        private_segment_size: kernel.private_segment_size,
        group_segment_size: kernel.group_segment_size,
        kernel_object: kernel.object,
        kernarg_address: kernarg,
        completion_signal: completion,
        ..Default::default()
    })
}

/// A barrier that waits for every (`and`) or any (`!and`) of up to five
/// signals to reach zero. A handle of 0 is no dependency.
pub(super) fn barrier(and: bool, deps: [hsa_signal_t; 5], completion: hsa_signal_t) -> Words {
    let kind = if and { HSA_PACKET_TYPE_BARRIER_AND } else { HSA_PACKET_TYPE_BARRIER_OR };
    words(&hsa_barrier_packet_t {
        header: header(kind),
        dep_signal: deps,
        completion_signal: completion,
        ..Default::default()
    })
}

/// AMD's barrier-value packet: waits until `(signal & mask) cond value`.
/// This is how a queue waits on the device for another queue's epoch.
pub(super) fn barrier_value(signal: hsa_signal_t, cond: u32, value: i64, mask: i64, completion: hsa_signal_t) -> Words {
    words(&hsa_amd_barrier_value_packet_t {
        header: header(HSA_PACKET_TYPE_VENDOR_SPECIFIC),
        amd_format: HSA_AMD_PACKET_TYPE_BARRIER_VALUE,
        signal,
        value,
        mask,
        cond,
        completion_signal: completion,
        ..Default::default()
    })
}

/// A ring slot a packet is written to.
pub(super) trait Slot {
    /// Writes words 1..16.
    fn write_body(&mut self, body: &[u32]);
    /// Stores word 0 with release order: the packet processor may take the
    /// packet from here on.
    fn publish_header(&mut self, word: u32);
}

/// Writes `packet` into `slot`, body first, header word last.
pub(super) fn publish(slot: &mut impl Slot, packet: &Words) {
    slot.write_body(&packet[1..]);
    slot.publish_header(packet[0]);
}

/// A slot of ring memory that ROCr mapped for the packet processor.
pub(super) struct RingSlot {
    pub(super) words: *mut u32,
}

impl Slot for RingSlot {
    fn write_body(&mut self, body: &[u32]) {
        // SAFETY: `words` is a 64-byte, 64-byte-aligned slot of a live ring
        // that the queue reserved for us (the packet processor has consumed
        // what was there and left it INVALID).
        unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), self.words.add(1), body.len().min(15)) };
    }

    fn publish_header(&mut self, word: u32) {
        // SAFETY: as in `write_body`; the packet processor reads the header
        // word atomically too.
        unsafe { AtomicU32::from_ptr(self.words) }.store(word, Ordering::Release);
    }
}

/// The slot of packet `index` in a ring of `size` packets (a power of two):
/// indices grow for ever, slots wrap.
pub(super) fn slot_of(index: u64, size: u32) -> usize {
    (index & u64::from(size - 1)) as usize
}

/// Whether `n` packets starting at write index `write` fit in a ring of
/// `size` whose packet processor has read up to `read`: no slot may be
/// reused before the processor is past it.
pub(super) fn fits(write: u64, read: u64, n: u64, size: u32) -> bool {
    write + n - read <= u64::from(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &Words) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn headers_carry_type_barrier_and_system_fences() {
        // type | barrier << 8 | system (2) << 9 | system (2) << 11
        assert_eq!(header(HSA_PACKET_TYPE_KERNEL_DISPATCH), 0x1502);
        assert_eq!(header(HSA_PACKET_TYPE_BARRIER_AND), 0x1503);
        assert_eq!(header(HSA_PACKET_TYPE_BARRIER_OR), 0x1505);
        assert_eq!(header(HSA_PACKET_TYPE_VENDOR_SPECIFIC), 0x1500);
    }

    #[test]
    fn dispatch_golden_bytes() {
        let kernel = KernelObject {
            object: 0x7f00_1234_5600,
            kernarg_size: 32,
            group_segment_size: 0x400,
            private_segment_size: 0x10,
        };
        let p = dispatch(&kernel, [256, 4, 1], [64, 2, 1], 0x7f00_0000_1000, hsa_signal_t { handle: 0xABCD });
        #[rustfmt::skip]
        let golden = [
            0x02, 0x15, 0x02, 0x00, // header, setup: 2 dimensions
            0x40, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, // workgroup 64 x 2 x 1, reserved0
            0x00, 0x01, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // grid 256 x 4 x 1
            0x10, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, // private, group segment sizes
            0x00, 0x56, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, // kernel object
            0x00, 0x10, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, // kernarg address
            0, 0, 0, 0, 0, 0, 0, 0, // reserved2
            0xCD, 0xAB, 0, 0, 0, 0, 0, 0, // completion signal
        ];
        assert_eq!(bytes(&p), golden);
        // Three dimensions once z is used; one when neither y nor z is.
        assert_eq!(dispatch(&kernel, [1, 1, 2], [1, 1, 1], 0, hsa_signal_t::default())[0] >> 16, 3);
        assert_eq!(dispatch(&kernel, [9, 1, 1], [3, 1, 1], 0, hsa_signal_t::default())[0] >> 16, 1);
    }

    #[test]
    fn barrier_golden_bytes() {
        let s = |h| hsa_signal_t { handle: h };
        let p = barrier(true, [s(1), s(2), s(0), s(0), s(0)], s(9));
        let mut golden = vec![0x03, 0x15, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2];
        golden.resize(56, 0);
        golden.extend([9, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes(&p), golden);
        assert_eq!(bytes(&barrier(false, [s(1), s(2), s(0), s(0), s(0)], s(9)))[0], 0x05);
    }

    #[test]
    fn barrier_value_golden_bytes() {
        let p = barrier_value(hsa_signal_t { handle: 0x1122 }, HSA_SIGNAL_CONDITION_LT, 5, -1, hsa_signal_t::default());
        #[rustfmt::skip]
        let golden = [
            0x00, 0x15, 0x02, 0x00, 0, 0, 0, 0, // header, AMD format BARRIER_VALUE, reserved
            0x22, 0x11, 0, 0, 0, 0, 0, 0, // signal
            5, 0, 0, 0, 0, 0, 0, 0, // value
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // mask
            2, 0, 0, 0, 0, 0, 0, 0, // cond LT, reserved1
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved2, reserved3
            0, 0, 0, 0, 0, 0, 0, 0, // completion signal
        ];
        assert_eq!(bytes(&p), golden);
    }

    /// Records what a slot saw, in order.
    #[derive(Default)]
    struct Recorder(Vec<(&'static str, Vec<u32>)>);

    impl Slot for Recorder {
        fn write_body(&mut self, body: &[u32]) {
            self.0.push(("body", body.to_vec()));
        }
        fn publish_header(&mut self, word: u32) {
            self.0.push(("header", vec![word]));
        }
    }

    #[test]
    fn the_header_is_published_last_and_alone() {
        let p = barrier(true, [hsa_signal_t { handle: 7 }; 5], hsa_signal_t::default());
        let mut slot = Recorder::default();
        publish(&mut slot, &p);
        assert_eq!(slot.0.len(), 2);
        assert_eq!(slot.0[0], ("body", p[1..].to_vec()));
        assert_eq!(slot.0[1], ("header", vec![p[0]]));
    }

    #[test]
    fn ring_memory_holds_the_packet_once_published() {
        #[repr(C, align(64))]
        struct Ring([u32; 32]);
        let mut ring = Ring([0; 32]);
        // Slot 1 starts INVALID, as ROCr leaves a consumed slot.
        ring.0[16] = u32::from(HSA_PACKET_TYPE_INVALID);
        let p = barrier_value(hsa_signal_t { handle: 3 }, HSA_SIGNAL_CONDITION_EQ, 0, -1, hsa_signal_t::default());
        publish(&mut RingSlot { words: ring.0[16..].as_mut_ptr() }, &p);
        assert_eq!(ring.0[16..], p);
        assert_eq!(ring.0[..16], [0; 16], "slot 0 untouched");
    }

    #[test]
    fn ring_indices_wrap_into_slots_and_never_overrun() {
        assert_eq!(slot_of(0, 64), 0);
        assert_eq!(slot_of(63, 64), 63);
        assert_eq!(slot_of(64, 64), 0);
        assert_eq!(slot_of(u64::MAX, 64), 63);
        // A full ring takes nothing more until the processor reads on.
        assert!(fits(10, 0, 54, 64));
        assert!(!fits(10, 0, 55, 64));
        assert!(fits(1000, 937, 1, 64));
        assert!(!fits(1001, 937, 1, 64));
        assert!(fits(1001, 938, 1, 64));
    }
}
