// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The queues of a device, as the module reports them in debugfs
//! (`/sys/kernel/debug/radiance/radianceN/queues`): every process's queues.

use super::debugfs;
use crate::Result;

/// One queue as the scheduler sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// The process that opened the file the queue belongs to.
    pub pid: i32,
    /// The queue's id in that file.
    pub queue: u32,
    /// The hardware stream the scheduler put it on.
    pub stream: u8,
    /// Ring size in packets.
    pub ring: u32,
    /// Packets taken from the ring and packets completed.
    pub submitted: u64,
    pub completed: u64,
    /// Bytes its completed copies and fills moved (None: the module does
    /// not count them).
    pub bytes: Option<u64>,
    pub faulted: bool,
    /// The fault: a positive errno, the packet index, and Gluon's
    /// ERR_CODE, ERR_PC and ERR_THREAD for a device fault.
    pub error: u32,
    pub fault_index: u64,
    pub err_code: u32,
    pub err_pc: u32,
    pub err_thread: u32,
}

impl QueueStats {
    /// Reads device `index`'s queues; needs root and debugfs.
    pub fn read(index: u32) -> Result<Vec<Self>> {
        debugfs::read(index, "queues")?.lines().map(Self::parse).collect()
    }

    /// Parses one `key=value ...` line; every field must be there.
    fn parse(line: &str) -> Result<Self> {
        let f = |key| debugfs::field::<u64>(line, key);
        let g = |key| debugfs::field::<u32>(line, key);
        Ok(Self {
            pid: debugfs::field(line, "pid")?,
            queue: g("queue")?,
            stream: debugfs::field(line, "stream")?,
            ring: g("ring")?,
            submitted: f("submitted")?,
            completed: f("completed")?,
            bytes: debugfs::counter(line, "bytes")?,
            faulted: debugfs::text_field(line, "status")? == "faulted",
            error: g("error")?,
            fault_index: f("fault_index")?,
            err_code: g("err_code")?,
            err_pc: g("err_pc")?,
            err_thread: g("err_thread")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_faulted_queue() {
        let line = "pid=42 queue=3 stream=2 ring=16 submitted=5 completed=4 bytes=8192 status=faulted error=5 \
                    fault_index=4 err_code=1 err_pc=0x1234 err_thread=7";
        let q = QueueStats::parse(line).unwrap();
        assert_eq!((q.pid, q.queue, q.stream, q.ring), (42, 3, 2, 16));
        assert_eq!((q.submitted, q.completed, q.bytes), (5, 4, Some(8192)));
        let older = line.replace(" bytes=8192", "");
        assert_eq!(QueueStats::parse(&older).unwrap().bytes, None);
        assert!(q.faulted);
        assert_eq!((q.error, q.fault_index, q.err_code, q.err_pc, q.err_thread), (5, 4, 1, 0x1234, 7));
    }

    #[test]
    fn a_missing_or_bad_field_is_an_error() {
        assert!(QueueStats::parse("pid=1 queue=1").is_err());
        let bad = "pid=1 queue=1 stream=0 ring=x submitted=0 completed=0 status=active error=0 fault_index=0 \
                   err_code=0 err_pc=0x0 err_thread=0";
        assert!(QueueStats::parse(bad).unwrap_err().to_string().contains("ring"));
    }
}
