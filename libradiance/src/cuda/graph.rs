// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Recorded command buffers as CUDA graphs, as IREE's CUDA HAL keeps them:
//! a command buffer that a queue executes again is captured from the
//! queue's stream into a graph once, and later executions launch the graph,
//! one driver call (`cuGraphLaunch`) for all of its commands.
//!
//! The first execution runs command by command: a command buffer run once
//! would pay for the capture and gain nothing. Every execution still checks
//! its launches on the host as a Radiance device would (`native_launch.rs`),
//! and the graph is launched only if all of them pass and the native
//! pointers and arguments are the ones it was captured with: a buffer freed
//! and another allocated at the same 32-bit address has other native
//! pointers, and the recording is captured again. Recordings with updates
//! (whose staging memory is new each time) or SPIN launches, and those of a
//! single command, always run command by command.

use super::{result::Api, sys::CUgraphExec};
use crate::{command_buffer::Op, Command, Result};
use std::sync::{Arc, Weak};

/// Recordings a queue remembers, at most: a program that records command
/// buffers without end must not grow the cache without end.
const KEPT: usize = 64;

/// A queue's graphs, by recording.
#[derive(Default)]
pub(super) struct Graphs {
    entries: Vec<Entry>,
}

struct Entry {
    /// Weak, so that the cache keeps no recording alive; its allocation
    /// stays, so that no other recording can have its address.
    recording: Weak<[Command]>,
    captured: Option<Captured>,
}

/// A recording's graph, and the native addresses and arguments it was
/// captured with, in command order.
pub(super) struct Captured {
    exec: CUgraphExec,
    key: Vec<u64>,
}

// SAFETY: an executable graph may be launched and destroyed from any
// thread; the queue's state lock serialises its users.
unsafe impl Send for Graphs {}

/// Whether a recording can run as a graph at all.
pub(super) fn capturable(recording: &[Command]) -> bool {
    recording.len() > 1 && !recording.iter().any(|c| matches!(c.0, Op::Update { .. }))
}

impl Graphs {
    /// The recording's entry if this queue ran it before; else it is
    /// remembered for the next time.
    pub(super) fn seen(&mut self, recording: &Arc<[Command]>) -> Option<&mut Option<Captured>> {
        let found = self.entries.iter().position(|e| std::ptr::eq(e.recording.as_ptr(), Arc::as_ptr(recording)));
        if let Some(at) = found {
            return Some(&mut self.entries[at].captured);
        }
        if self.entries.len() >= KEPT {
            // Recordings gone first; then the oldest.
            let gone = self.entries.iter().position(|e| e.recording.strong_count() == 0).unwrap_or(0);
            self.entries.remove(gone);
        }
        self.entries.push(Entry { recording: Arc::downgrade(recording), captured: None });
        None
    }

    /// Destroys every graph. Graph runs still queued finish first (the
    /// driver frees an executable graph when its last run is done).
    ///
    /// # Safety
    /// The queue's context is current.
    pub(super) unsafe fn clear(&mut self, api: Api) {
        for entry in self.entries.drain(..) {
            if let Some(captured) = entry.captured {
                let _ = api.graph_exec_destroy(captured.exec);
            }
        }
    }
}

impl Captured {
    /// Whether it was captured with these native addresses and arguments.
    pub(super) fn matches(&self, key: &[u64]) -> bool {
        self.key == key
    }

    /// The graph of what `queue` queues on `stream` while capturing, for
    /// `key`. If queueing fails, the capture ends and nothing was run.
    ///
    /// # Safety
    /// `stream` is live, of the current context, and not capturing.
    pub(super) unsafe fn capture(
        api: Api,
        stream: super::sys::CUstream,
        key: Vec<u64>,
        queue: impl FnOnce() -> Result<()>,
    ) -> Result<Self> {
        api.begin_capture(stream)?;
        let queued = queue();
        let graph = api.end_capture(stream);
        if let Err(e) = queued {
            if let Ok(graph) = graph {
                let _ = api.graph_destroy(graph);
            }
            return Err(e);
        }
        let graph = graph?;
        let exec = api.graph_instantiate(graph);
        let _ = api.graph_destroy(graph);
        Ok(Self { exec: exec?, key })
    }

    /// Queues a run of the graph on `stream`.
    ///
    /// # Safety
    /// `stream` is live, of the current context, and what the graph
    /// addresses stays valid until the run is done.
    pub(super) unsafe fn launch(&self, api: Api, stream: super::sys::CUstream) -> Result<()> {
        api.graph_launch(self.exec, stream)
    }

    /// # Safety
    /// The queue's context is current; the graph is not used again.
    pub(super) unsafe fn destroy(self, api: Api) {
        let _ = api.graph_exec_destroy(self.exec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Device, Launch};

    fn recording(commands: Vec<Command>) -> Arc<[Command]> {
        commands.into()
    }

    #[test]
    fn only_recordings_of_several_commands_without_updates_are_captured() {
        let device = Device::open("host").unwrap();
        let buffer = device
            .allocate_buffer(crate::BufferParams {
                size: 64,
                memory: crate::MemoryType::HostVisible,
                usage: crate::BufferUsage::TRANSFER,
            })
            .unwrap();
        let dispatch = || Command::dispatch(Launch { grid: [1; 3], block: [1; 3], ..Default::default() }).unwrap();
        assert!(!capturable(&[dispatch()]));
        assert!(capturable(&[dispatch(), Command::barrier(), dispatch()]));
        assert!(!capturable(&[dispatch(), Command::update(&[1, 2, 3, 4], buffer.at(0)).unwrap()]));
    }

    #[test]
    fn a_recording_is_remembered_on_its_first_run_and_found_on_the_next() {
        let mut graphs = Graphs::default();
        let (a, b) = (recording(vec![Command::barrier()]), recording(vec![Command::barrier()]));
        assert!(graphs.seen(&a).is_none());
        assert!(graphs.seen(&b).is_none());
        assert!(graphs.seen(&a).is_some_and(|c| c.is_none()));
        assert!(graphs.seen(&b).is_some());
    }

    #[test]
    fn the_cache_is_bounded_and_drops_recordings_that_are_gone_first() {
        let mut graphs = Graphs::default();
        let kept = recording(vec![Command::barrier()]);
        assert!(graphs.seen(&kept).is_none());
        let mut live = Vec::new();
        for i in 0..KEPT - 1 {
            let r = recording(vec![Command::barrier()]);
            assert!(graphs.seen(&r).is_none());
            // Half of them go away at once.
            if i % 2 == 0 {
                live.push(r);
            }
        }
        assert_eq!(graphs.entries.len(), KEPT);
        // Full: a new one takes the place of one that is gone, not of the
        // oldest, which is still alive.
        let newcomer = recording(vec![Command::barrier()]);
        assert!(graphs.seen(&newcomer).is_none());
        assert_eq!(graphs.entries.len(), KEPT);
        assert!(graphs.seen(&kept).is_some());
        assert!(graphs.seen(&newcomer).is_some());
        assert!(live.iter().all(|r| graphs.entries.iter().any(|e| std::ptr::eq(e.recording.as_ptr(), Arc::as_ptr(r)))));
    }
}
