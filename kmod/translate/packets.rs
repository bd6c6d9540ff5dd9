// SPDX-License-Identifier: GPL-2.0

//! One function per packet kind but the launches (see `launch`): each
//! reads the packet's words, checks them and the objects they name, and
//! says what the packet does. What a checked fill, copy or counter read
//! becomes on this device is `makeup`'s business.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use super::{
    hi,
    lo,
    makeup,
    vram_addr,
    zero_from,
    SemUpdate,
    Staged,
    Translator, //
};
use crate::{
    semaphore::WaitState,
    uapi::{
        self,
        packet_flags,
        packet_kind, //
    },
};

/// FILL: a VRAM BO with a 1, 2 or 4 byte pattern, as the device can
/// ([`makeup::fill`]). False if the staging page this needs is not to be
/// had now.
pub(super) fn fill(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
    let (dst, pattern_size, offset, size) = (lo(body[0]), hi(body[0]), body[1], body[2]);
    let (pattern, pad) = (lo(body[3]), hi(body[3]));
    if pad != 0 {
        return Err(EINVAL);
    }
    zero_from(body, 4)?;
    let bo = t.objects.bo(dst)?;
    bo.check_range(offset, size)?;
    let pattern = match pattern_size {
        1 if pattern <= 0xff => pattern * 0x0101_0101,
        2 if pattern <= 0xffff => pattern * 0x0001_0001,
        4 => pattern,
        _ => return Err(EINVAL),
    };
    if offset % u64::from(pattern_size) != 0 || size % u64::from(pattern_size) != 0 {
        return Err(EINVAL);
    }
    let start = vram_addr(&bo, offset)?;
    let end = vram_addr(&bo, offset + size - 1)? + 1;
    if !makeup::fill(t, out, start, end, pattern)? {
        return Ok(false);
    }
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(true)
}

/// COPY: between two VRAM BOs, or a host BO and a VRAM BO in either
/// direction (Gluon copies to or from VRAM only), as the device can
/// ([`makeup::copy`]). False if the staging page this needs is not to be
/// had now.
pub(super) fn copy(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
    let (src, dst, src_off, dst_off, size) = (lo(body[0]), hi(body[0]), body[1], body[2], body[3]);
    zero_from(body, 4)?;
    let (s, d) = (t.objects.bo(src)?, t.objects.bo(dst)?);
    s.check_range(src_off, size)?;
    d.check_range(dst_off, size)?;
    if Arc::ptr_eq(&s, &d) && src_off < dst_off + size && dst_off < src_off + size {
        return Err(EINVAL);
    }
    let vram = uapi::placement::VRAM;
    let (s_vram, d_vram) = (s.placement() == vram, d.placement() == vram);
    if !s_vram && !d_vram {
        return Err(EINVAL);
    }
    if !makeup::copy(t, out, (&s, src_off), (&d, dst_off), size)? {
        return Ok(false);
    }
    out.completion.bos.push(s, GFP_KERNEL)?;
    out.completion.bos.push(d, GFP_KERNEL)?;
    Ok(true)
}

/// Where a WAIT_SEMAPHORE stands.
pub(super) enum Wait {
    Reached,
    Pending,
    Skip { count: u32, error: u32 },
}

/// WAIT_SEMAPHORE: the queue goes on past it once the semaphore reaches
/// the value; a failed semaphore faults the queue, or with
/// SKIP_ON_FAILURE skips the packet and `count` more.
pub(super) fn wait(t: &Translator<'_>, h: &uapi::PacketHeader, body: &[u64; 7]) -> Result<Wait> {
    let (handle, skip, value) = (lo(body[0]), hi(body[0]), body[1]);
    let skip_flag = h.flags & packet_flags::SKIP_ON_FAILURE != 0;
    if skip != 0 && !skip_flag {
        return Err(EINVAL);
    }
    zero_from(body, 2)?;
    let sems = t.objects.semaphores();
    match sems.wait_state(handle, value, Some(t.sem_hint))? {
        WaitState::Reached => Ok(Wait::Reached),
        WaitState::Pending => Ok(Wait::Pending),
        WaitState::Failed(error) if skip_flag => Ok(Wait::Skip { count: skip, error }),
        WaitState::Failed(error) => Err(Error::from_errno(-(error as i32))),
    }
}

/// SIGNAL_SEMAPHORE: raises the semaphore when the packet completes, in
/// order after everything before it on the queue.
pub(super) fn signal(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result {
    let (handle, pad, value) = (lo(body[0]), hi(body[0]), body[1]);
    if pad != 0 {
        return Err(EINVAL);
    }
    zero_from(body, 2)?;
    // The semaphore must exist now (or, at once, when it is signalled).
    if !t.at_once {
        t.objects.semaphores().wait_state(handle, value, None)?;
    }
    out.completion.update = Some(SemUpdate::Signal { handle, value });
    Ok(())
}

/// READ_COUNTER and TIMESTAMP: a device counter (or its clock) into VRAM,
/// after everything before it on the queue ([`makeup::read_counter`]).
pub(super) fn counter(t: &Translator<'_>, kind: u8, body: &[u64; 7], out: &mut Staged) -> Result {
    let (dst, counter, offset) = (lo(body[0]), hi(body[0]), body[1]);
    zero_from(body, 2)?;
    if offset % 8 != 0 {
        return Err(EINVAL);
    }
    let counter = match (kind, counter) {
        (packet_kind::TIMESTAMP, 0) => uapi::counter::CLOCK_NS,
        (packet_kind::READ_COUNTER, c) if c < uapi::counter::COUNT => c,
        _ => return Err(EINVAL),
    };
    let bo = t.objects.bo(dst)?;
    bo.check_range(offset, 8)?;
    let dst = vram_addr(&bo, offset)?;
    makeup::read_counter(t, out, counter, dst)?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(())
}
