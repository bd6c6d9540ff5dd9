// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores of a kmod device. Queries read the file's value page
//! (no syscall); waits spin on it briefly before they sleep in SEM_WAIT.

use super::{ioctl, Device};
use crate::{Error, Result};
use memmap2::{Mmap, MmapOptions};
use radiance_uapi as uapi;
use rustix::{io::Errno, time::ClockId};
use std::{
    os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

/// How long a wait spins on the value page before it sleeps in the kernel:
/// about the cost of the syscall it may save.
const SPIN: Duration = Duration::from_micros(20);

/// A timeline semaphore; destroyed when dropped (its waiters get
/// ECANCELED).
#[derive(Debug)]
pub struct Semaphore {
    fd: Arc<OwnedFd>,
    handle: u32,
    values: Arc<Mmap>,
    /// Byte offset of the value in `values`.
    at: usize,
}

impl Device {
    /// A semaphore whose value starts at `initial`.
    pub fn create_semaphore(&self, initial: u64) -> Result<Semaphore> {
        let mut args = uapi::SemCreate { initial, ..Default::default() };
        ioctl::sem_create(&*self.fd, &mut args).map_err(|e| Error::os("SEM_CREATE", e))?;
        self.semaphore_at(args.handle, args.value_offset)
    }

    /// A handle in this device's file for `semaphore`, a semaphore of
    /// another device (or file) of the module (SEM_IMPORT_HANDLE, ABI
    /// 1.10): this file's queues wait on and signal that semaphore itself.
    /// Once it is destroyed or its file closed, the alias reads as failed
    /// with ECANCELED.
    pub fn import_semaphore(&self, semaphore: &Semaphore) -> Result<Semaphore> {
        let mut args =
            uapi::SemImportHandle { fd: semaphore.fd.as_raw_fd(), handle: semaphore.handle, ..Default::default() };
        ioctl::sem_import_handle(&*self.fd, &mut args).map_err(|e| Error::os("SEM_IMPORT_HANDLE", e))?;
        self.semaphore_at(args.new_handle, args.value_offset)
    }

    /// Semaphore `handle` of this file, whose value is at `value_offset`.
    fn semaphore_at(&self, handle: u32, value_offset: u64) -> Result<Semaphore> {
        let page = page_size();
        let values = match self.sem_values.get() {
            Some(v) => v.clone(),
            None => {
                // SAFETY: the page is read-only to us and only the kernel
                // writes it, 8 aligned bytes at a time (read atomically).
                let map = unsafe {
                    MmapOptions::new().offset(value_offset / page * page).len(page as usize).map(self.fd.as_ref())
                }
                .map_err(|e| Error::io("mmap semaphore values", &e))?;
                self.sem_values.get_or_init(|| Arc::new(map)).clone()
            }
        };
        Ok(Semaphore { fd: self.fd.clone(), handle, values, at: (value_offset % page) as usize })
    }

    /// Waits until every point (or, with `any`, one of them) is reached, a
    /// semaphore fails (its error), or `deadline` passes (DeadlineExceeded).
    /// Returns the index of the point that ended an `any` wait.
    pub fn wait_semaphores(
        &self,
        points: &[(&Semaphore, u64)],
        any: bool,
        deadline: Option<Instant>,
    ) -> Result<Option<usize>> {
        let raw: Vec<uapi::SemWaitPoint> =
            points.iter().map(|(s, value)| uapi::SemWaitPoint { handle: s.handle, pad: 0, value: *value }).collect();
        let mut args = uapi::SemWait {
            points: raw.as_ptr() as u64,
            count: u32::try_from(raw.len()).map_err(|_| Error::InvalidArgument("too many wait points".into()))?,
            flags: if any { uapi::sem_wait_flags::ANY } else { 0 },
            deadline_ns: deadline.map_or(i64::MAX, monotonic_ns),
            ..Default::default()
        };
        loop {
            match ioctl::sem_wait(&*self.fd, &mut args) {
                Ok(()) => return Ok(any.then_some(args.index as usize)),
                // A signal handler ran; the deadline is absolute, go on.
                Err(Errno::INTR) => continue,
                Err(Errno::TIME) => return Err(Error::DeadlineExceeded),
                Err(e) => return Err(Error::os(format!("SEM_WAIT (point {})", args.index), e)),
            }
        }
    }
}

impl Semaphore {
    /// The handle in its file, for queue packets.
    pub(crate) fn handle(&self) -> u32 {
        self.handle
    }

    fn value_cell(&self) -> &AtomicU64 {
        // SAFETY: `at` is an 8-aligned offset inside the mapped page, which
        // lives as long as `self.values`; the kernel writes it atomically.
        unsafe { AtomicU64::from_ptr(self.values.as_ptr().add(self.at).cast::<u64>().cast_mut()) }
    }

    /// The value page's word: the value, or `SEM_FAILED_VALUE` once
    /// failed.
    pub fn value(&self) -> u64 {
        self.value_cell().load(Ordering::Acquire)
    }

    /// The value, read from the value page; the error if it failed.
    pub fn query(&self) -> Result<u64> {
        match self.value() {
            uapi::SEM_FAILED_VALUE => Err(match self.error() {
                Ok(errno) => Error::os("semaphore failed", errno.unwrap_or(Errno::PROTO)),
                Err(e) => e,
            }),
            value => Ok(value),
        }
    }

    /// The errno the semaphore failed with (SEM_QUERY); `None` if it has
    /// not failed.
    pub fn error(&self) -> Result<Option<Errno>> {
        let mut args = uapi::SemQuery { handle: self.handle, ..Default::default() };
        ioctl::sem_query(&*self.fd, &mut args).map_err(|e| Error::os("SEM_QUERY", e))?;
        Ok((args.error != 0).then(|| Errno::from_raw_os_error(args.error as i32)))
    }

    /// Raises the value to `value` (must be above it).
    pub fn signal(&self, value: u64) -> Result<()> {
        let mut args = uapi::SemSignal { handle: self.handle, pad: 0, value };
        ioctl::sem_signal(&*self.fd, &mut args).map_err(|e| Error::os(format!("SEM_SIGNAL to {value}"), e))
    }

    /// Fails the semaphore with a positive errno; every waiter gets it.
    pub fn fail(&self, errno: Errno) -> Result<()> {
        let mut args = uapi::SemFail { handle: self.handle, error: errno.raw_os_error().unsigned_abs() };
        ioctl::sem_fail(&*self.fd, &mut args).map_err(|e| Error::os("SEM_FAIL", e))
    }

    /// Waits until the value reaches `value`: spins on the value page for a
    /// moment, then sleeps in the kernel until `deadline` (None: for ever).
    pub fn wait(&self, device: &Device, value: u64, deadline: Option<Instant>) -> Result<()> {
        let spin_until = Instant::now() + SPIN;
        while Instant::now() < spin_until {
            if self.query()? >= value {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        device.wait_semaphores(&[(self, value)], false, deadline).map(drop)
    }
}

impl Semaphore {
    /// A close-on-exec sync_file whose fence signals when the value reaches
    /// `value`, signals with the error if the semaphore fails, and with
    /// ECANCELED if it goes first: how a point crosses to other processes
    /// and drivers.
    pub fn export_sync_file(&self, value: u64) -> Result<OwnedFd> {
        let mut args = uapi::SemExportSyncFile {
            handle: self.handle,
            flags: uapi::export_flags::CLOEXEC,
            value,
            ..Default::default()
        };
        ioctl::sem_export_sync_file(&*self.fd, &mut args).map_err(|e| Error::os("SEM_EXPORT_SYNC_FILE", e))?;
        // SAFETY: the kernel just gave us this new descriptor; we own it.
        Ok(unsafe { OwnedFd::from_raw_fd(args.fd) })
    }

    /// Advances the value to `value` when `sync_file`'s fence signals (or
    /// fails the semaphore with the fence's error).
    pub fn import_sync_file(&self, sync_file: BorrowedFd<'_>, value: u64) -> Result<()> {
        let mut args =
            uapi::SemImportSyncFile { handle: self.handle, fd: sync_file.as_raw_fd(), value, ..Default::default() };
        ioctl::sem_import_sync_file(&*self.fd, &mut args).map_err(|e| Error::os("SEM_IMPORT_SYNC_FILE", e))
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        let mut args = uapi::SemDestroy { handle: self.handle, pad: 0 };
        // Only a bad handle can fail, and this one is ours.
        let _ = ioctl::sem_destroy(&*self.fd, &mut args);
    }
}

fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// `deadline` on CLOCK_MONOTONIC, which `Instant` also reads on Linux.
fn monotonic_ns(deadline: Instant) -> i64 {
    let now = rustix::time::clock_gettime(ClockId::Monotonic);
    let now_ns = now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128;
    let left = deadline.saturating_duration_since(Instant::now()).as_nanos() as i128;
    i64::try_from(now_ns + left).unwrap_or(i64::MAX)
}
