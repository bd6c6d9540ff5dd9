// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A process's CPU time, read from /proc: what socket mode reports to the
//! kernel as the sim's progress with `--cpu-progress`. A simulator that
//! sleeps when idle and computes is simulating the command it holds; one
//! that is stopped, blocked or dead computes nothing, and the kernel's
//! watchdog resets the device for it. (A kernel that loops for ever in the
//! sim computes too: only destroying its queue gives it up.)

/// One process's CPU time, as last read.
pub struct CpuTime {
    pid: i32,
    /// User and system time so far, in clock ticks.
    ticks: u64,
}

impl CpuTime {
    /// Process `pid`'s, if /proc shows it.
    pub fn of(pid: i32) -> Option<Self> {
        Some(Self { pid, ticks: ticks(pid)? })
    }

    /// Clock ticks it computed since the last call (0 if it is gone).
    pub fn advanced(&mut self) -> u64 {
        let now = ticks(self.pid).unwrap_or(self.ticks);
        let moved = now.saturating_sub(self.ticks);
        self.ticks = now;
        moved
    }
}

/// `utime + stime` of `/proc/PID/stat`, in clock ticks.
fn ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing paren, from the state (3rd):
    // utime and stime are the 14th and 15th.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_computing_advances_and_a_missing_one_has_none() {
        let mut me = CpuTime::of(std::process::id() as i32).expect("/proc shows this process");
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(100) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(me.advanced() > 0, "100 ms of computing shows in /proc");
        assert!(CpuTime::of(i32::MAX).is_none());
    }
}
