// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The seam between the public HAL types and the backends (`host`, `kmod`,
//! `cuda` and `hsa`).
//!
//! A backend implements [`Backend`] for a device and the object traits for
//! what the device creates. The public types ([`crate::Device`],
//! [`crate::Queue`], ...) do every check that does not depend on the backend
//! (ranges, alignment, usage, memory type, same device) before calling in, so
//! backends see only well-formed requests. Objects reach a backend as the
//! public types; a backend gets back its own object with `as_any` and a
//! downcast, which cannot fail for objects of its own device (the public layer
//! has checked that).
//!
//! Every trait is object-safe and `Send + Sync`: the C ABI hands objects to
//! any thread.

use crate::{
    device_group::Interop, //
    BufferParams,
    Command,
    DeviceInfo,
    Error,
    Launch,
    Points,
    Result,
    SemaphoreList,
    WaitMode,
};
use std::{
    any::Any,
    os::fd::{BorrowedFd, OwnedFd},
    sync::Arc,
    time::Instant,
};

/// A device: the factory of everything else, and the host-side waiter.
pub trait Backend: Send + Sync {
    /// What the device is.
    fn info(&self) -> &DeviceInfo;

    /// A timeline semaphore whose payload starts at `initial`.
    fn create_semaphore(&self, initial: u64) -> Result<Arc<dyn BackendSemaphore>>;

    /// Blocks until all (or any) of `points` are reached, one of them fails
    /// (its error is returned), or `deadline` passes
    /// ([`Error::DeadlineExceeded`]; never before the deadline). `None` waits
    /// for ever. Every semaphore is this device's.
    fn wait_semaphores(&self, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()>;

    /// Device memory with a device address. Size and flags are checked.
    fn allocate_buffer(&self, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>>;

    /// A buffer over someone else's dma-buf.
    fn import_dma_buf(&self, fd: BorrowedFd<'_>, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>>;

    /// A new queue. Dropping the last reference to it cancels what it has
    /// not finished (see [`crate::Queue`]).
    fn create_queue(&self) -> Result<Arc<dyn BackendQueue>>;

    /// What it shares with other devices of a group: the topology's routes
    /// follow from it. Nothing, unless the backend says otherwise.
    fn interop(&self) -> Interop {
        Interop::default()
    }

    /// A semaphore of this device that is `semaphore` itself, a semaphore of
    /// another device of the same driver (where
    /// [`Interop::semaphore_aliases`] or [`Interop::cuda_events`]): waiting
    /// on and signalling it act on `semaphore`, with nothing in between.
    fn alias_semaphore(&self, _semaphore: &Arc<dyn BackendSemaphore>) -> Result<Arc<dyn BackendSemaphore>> {
        Err(Error::Unsupported("this backend cannot alias another device's semaphores".into()))
    }

    /// Lets this device's queues copy `other`'s memory directly (peer to
    /// peer); whether they can. The topology asks for every ordered pair of
    /// its devices. No, unless the backend says otherwise.
    fn reach_memory_of(&self, _other: &dyn Backend) -> bool {
        false
    }

    /// For a backend's downcast of another device (`reach_memory_of`).
    fn as_any(&self) -> &dyn Any;
}

/// A timeline semaphore.
pub trait BackendSemaphore: Send + Sync {
    /// The payload, or the error it failed with.
    fn query(&self) -> Result<u64>;

    /// Raises the payload to `value` from the host. `value` must be above the
    /// payload ([`Error::OutOfRange`] otherwise); a failed semaphore returns
    /// its error.
    fn signal(&self, value: u64) -> Result<()>;

    /// Fails the semaphore: every current and future waiter gets `error`. The
    /// first failure sticks; later ones are ignored.
    fn fail(&self, error: Error);

    /// A sync_file that signals when the payload reaches `value`, or fails
    /// with the semaphore (where [`Interop::sync_file`]).
    fn export_sync_file(&self, _value: u64) -> Result<OwnedFd> {
        Err(Error::Unsupported("this backend's semaphores do not export sync_files".into()))
    }

    /// Raises the payload to `value` when `sync_file` signals, or fails the
    /// semaphore when it fails: then `origin`, the semaphore the sync_file
    /// came from, says with what error (where [`Interop::sync_file`]).
    fn import_sync_file(
        &self,
        _sync_file: BorrowedFd<'_>,
        _value: u64,
        _origin: Arc<dyn BackendSemaphore>,
    ) -> Result<()> {
        Err(Error::Unsupported("this backend's semaphores do not import sync_files".into()))
    }

    /// A failure of this semaphore that the kernel carried from `origin`
    /// (another device's semaphore it is linked to) is `origin`'s error:
    /// asked for it when this one fails with the same errno. Nothing, where
    /// the backend keeps errors itself.
    fn follow(&self, _origin: Arc<dyn BackendSemaphore>) {}

    /// For the backend's downcast.
    fn as_any(&self) -> &dyn Any;
}

/// A buffer of device memory.
pub trait BackendBuffer: Send + Sync {
    /// The address kernels and queue commands use for byte 0. Radiance
    /// backends (host, kmod) hand out 32-bit addresses; CUDA's are 64-bit.
    fn device_address(&self) -> u64;

    /// Copies `dst.len()` bytes at `offset` into `dst` from the host. The
    /// buffer is host-visible and the range inside it.
    fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()>;

    /// Copies `src` into the buffer at `offset` from the host. The buffer is
    /// host-visible and the range inside it.
    fn write(&self, offset: u64, src: &[u8]) -> Result<()>;

    /// Where `length` bytes at `offset` of a host-visible buffer are mapped
    /// in this process, valid while the buffer lives and until
    /// [`BackendBuffer::unmap_range`]: what the C ABI's
    /// `radiance_buffer_map` returns. The range is inside the buffer.
    fn map_range(&self, offset: u64, length: u64) -> Result<*mut u8>;

    /// Ends a mapping `map_range` made (`contents` is what it returned):
    /// where the host does not map the memory itself, this is when what it
    /// wrote reaches the device. Memory the host maps needs nothing.
    fn unmap_range(&self, _contents: *mut u8, _length: u64) -> Result<()> {
        Ok(())
    }

    /// A dma-buf of the buffer's memory.
    fn export_dma_buf(&self) -> Result<OwnedFd>;

    /// For the backend's downcast.
    fn as_any(&self) -> &dyn Any;
}

/// A queue: runs submissions asynchronously.
pub trait BackendQueue: Send + Sync {
    /// Queues `submission`; returns before it runs. A backend may run
    /// submissions in any order the semaphores allow, and the commands of one
    /// submission concurrently unless a barrier separates them.
    fn submit(&self, submission: Submission) -> Result<()>;

    /// [`BackendQueue::submit`] of work whose semaphores all belong to the
    /// queue's device, lent: a backend that queues such work at once need
    /// not own them (an allocation and two reference counts per list, which
    /// are measurable against a driver's launch call). The commands are lent
    /// too, taken only where the backend keeps them: a move through the
    /// virtual call copies a whole command, an empty one included. By
    /// default they are taken, the points made owned, and submitted.
    fn submit_local(&self, waits: Points<'_>, commands: &mut Commands, signals: Points<'_>) -> Result<()> {
        self.submit(Submission::owning(waits, std::mem::replace(commands, Commands::None), signals))
    }

    /// A launch with no waits and no signals, the commonest queue operation,
    /// lent: a backend that queues it at once (or fails its queue with it)
    /// says so with `true`. By default, and wherever a backend answers
    /// `false`, it is submitted as one command like any other operation.
    /// Lent, it is not moved into a command: a launch is some 200 bytes,
    /// and building and dropping the command around it is measurable
    /// against a driver's launch call (tools/bench-cuda, section 1).
    fn dispatch_alone(&self, _launch: &Launch) -> bool {
        false
    }
}

/// One unit of queue work: when every wait is reached, run the commands;
/// when they are done, signal. If a wait fails or a command fails, nothing
/// further runs and every signal semaphore fails with that error.
pub struct Submission {
    pub waits: SemaphoreList,
    pub commands: Commands,
    pub signals: SemaphoreList,
}

impl Submission {
    /// A submission of lent points, which it now owns.
    pub fn owning(waits: Points<'_>, commands: Commands, signals: Points<'_>) -> Self {
        let owned = |points: Points<'_>| points.iter().map(|&(s, v)| (s.clone(), v)).collect();
        Self { waits: owned(waits), commands, signals: owned(signals) }
    }
}

/// The commands of a submission, as a slice. A queue operation's one
/// command is moved in, not shared: that saves an allocation per operation,
/// which is measurable against a driver's launch call.
pub enum Commands {
    /// A barrier: waits and signals only.
    None,
    One(Command),
    /// A recorded command buffer's, shared with the recording.
    Recorded(Arc<[Command]>),
}

impl std::ops::Deref for Commands {
    type Target = [Command];

    fn deref(&self) -> &[Command] {
        match self {
            Self::None => &[],
            Self::One(command) => std::slice::from_ref(command),
            Self::Recorded(commands) => commands,
        }
    }
}
