// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The hardware streams of a device and the command at the head of each,
//! as the module's watchdog sees them in debugfs
//! (`/sys/kernel/debug/radiance/radianceN/streams`).

use super::debugfs;
use crate::Result;

/// The command at the head of a stream: the one the watchdog watches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeadCommand {
    /// The process and queue it belongs to, and its packet.
    pub pid: i32,
    pub queue: u32,
    pub packet: u64,
    /// `copy`, `fill`, `launch`, …
    pub command: String,
    /// Its size, in `unit`s (`bytes` or `threads`).
    pub units: u64,
    pub unit: String,
    /// What it did so far, as the device reports it; `None` on a device
    /// that reports no progress.
    pub done: Option<u64>,
    /// Milliseconds since it last moved (began, or did more of its work).
    pub still_ms: u64,
}

/// What a stream did since its device was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamActivity {
    /// Nanoseconds with a command in the device.
    pub busy_ns: u64,
    /// Commands the device answered.
    pub answered: u64,
    /// Bytes of the copies and fills, and threads of the launches, that
    /// completed.
    pub bytes: u64,
    pub threads: u64,
}

/// One hardware stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub stream: u8,
    /// `idle`, `running` or `retired`.
    pub state: String,
    /// Its commands in the device.
    pub commands: u32,
    pub head: Option<HeadCommand>,
    /// None: the module does not count it.
    pub activity: Option<StreamActivity>,
}

impl StreamStats {
    /// Reads device `index`'s streams; needs root and debugfs.
    pub fn read(index: u32) -> Result<Vec<Self>> {
        debugfs::read(index, "streams")?.lines().map(Self::parse).collect()
    }

    /// Parses one `key=value ...` line; a stream with a command at its head
    /// has every field of it.
    fn parse(line: &str) -> Result<Self> {
        let head = match debugfs::text_field(line, "command") {
            Ok(command) => Some(HeadCommand {
                pid: debugfs::field(line, "pid")?,
                queue: debugfs::field(line, "queue")?,
                packet: debugfs::field(line, "packet")?,
                command: command.to_owned(),
                units: debugfs::field(line, "units")?,
                unit: debugfs::text_field(line, "unit")?.to_owned(),
                done: match debugfs::text_field(line, "done")? {
                    "-" => None,
                    _ => Some(debugfs::field(line, "done")?),
                },
                still_ms: debugfs::field(line, "still_ms")?,
            }),
            Err(_) => None,
        };
        let activity = match debugfs::counter(line, "busy_ns")? {
            Some(busy_ns) => Some(StreamActivity {
                busy_ns,
                answered: debugfs::field(line, "answered")?,
                bytes: debugfs::field(line, "bytes")?,
                threads: debugfs::field(line, "threads")?,
            }),
            None => None,
        };
        Ok(Self {
            stream: debugfs::field(line, "stream")?,
            state: debugfs::text_field(line, "state")?.to_owned(),
            commands: debugfs::field(line, "commands")?,
            head,
            activity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_running_and_an_idle_stream() {
        let line = "stream=0 state=running commands=2 pid=42 queue=3 packet=7 command=fill units=16777216 \
                    unit=bytes done=4194304 still_ms=3";
        let s = StreamStats::parse(line).unwrap();
        assert_eq!((s.stream, s.state.as_str(), s.commands), (0, "running", 2));
        let h = s.head.unwrap();
        assert_eq!((h.pid, h.queue, h.packet, h.command.as_str()), (42, 3, 7, "fill"));
        assert_eq!((h.units, h.unit.as_str(), h.done, h.still_ms), (16777216, "bytes", Some(4194304), 3));
        let idle = StreamStats::parse("stream=1 state=idle commands=0").unwrap();
        assert_eq!((idle.stream, idle.head, idle.activity), (1, None, None));
        let counted = "stream=1 state=idle commands=0 busy_ns=5000 answered=3 bytes=12288 threads=1024";
        let activity = StreamActivity { busy_ns: 5000, answered: 3, bytes: 12288, threads: 1024 };
        assert_eq!(StreamStats::parse(counted).unwrap().activity, Some(activity));
        assert!(StreamStats::parse("stream=1 state=idle commands=0 busy_ns=5").is_err());
    }

    #[test]
    fn a_device_without_progress_says_so_and_bad_fields_are_errors() {
        let line = "stream=2 state=running commands=1 pid=1 queue=1 packet=0 command=launch units=64 \
                    unit=threads done=- still_ms=10";
        assert_eq!(StreamStats::parse(line).unwrap().head.unwrap().done, None);
        let bad = "stream=2 state=running commands=1 pid=1 queue=1 packet=0 command=launch units=x \
                   unit=threads done=- still_ms=10";
        assert!(StreamStats::parse(bad).unwrap_err().to_string().contains("units"));
    }
}
