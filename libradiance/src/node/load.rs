// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Loading an executable into a device: its segments in VRAM at their link
//! addresses, through a queue.

use super::{BufferObject, Device, Queue};
use crate::{executable::Executable, Result};

impl Device {
    /// Puts `exe`'s segments in VRAM at their link addresses: one VRAM BO
    /// spans them (`Busy` if any of the range is taken), zeros where no
    /// segment has data. Returns once the copies have completed; the code
    /// stays while the BO lives.
    pub fn load(&self, queue: &mut Queue, exe: &Executable) -> Result<BufferObject> {
        let (first, end) = exe.span();
        // The allocator's granule: the range starts on one.
        let base = first & !0xff;
        let image = self.create_bo_at(base, u64::from(end - base), false)?;
        for s in exe.segments().iter().filter(|s| !s.data.is_empty()) {
            queue.update(self, &s.data, &image, u64::from(s.addr - base))?;
        }
        queue.finish(None)?;
        Ok(image)
    }
}
