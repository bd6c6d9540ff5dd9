// SPDX-License-Identifier: GPL-2.0

//! The control node, `/dev/radiance-control`: a process with CAP_SYS_ADMIN
//! serves a Gluon through it (the protocol is `uapi::CONTROL_NODE`'s). An
//! open file declares one device; the device lives as long as the file:
//! when the server closes it or dies, the device is lost (its files answer
//! ENODEV, its queues fault, its semaphores fail) and its node goes.

use kernel::{
    fs::File,
    iov::{
        IovIterDest,
        IovIterSource, //
    },
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{
        poll::PollTable,
        Arc,
        ArcBorrow,
        Mutex, //
    },
};

use crate::{
    device::{
        DeviceNode,
        Registry, //
    },
    gluon::RESPONSE_SIZE,
    hw::{
        user::{
            self,
            User, //
        },
        Gluon,
    },
    ioctl,
    misc_node::{
        FileKind,
        NodeFile, //
    },
    trace, uapi,
};

/// Most bytes of responses one write() takes.
const MAX_WRITE: usize = 4096;

/// Bytes of responses a write() takes through the stack: a server answers
/// a few commands at a time, and an allocation per answer is a good part
/// of what the answer costs the kernel.
const STACK_WRITE: usize = 16 * RESPONSE_SIZE;

/// The device a control file serves.
struct Served {
    user: Arc<User>,
    node: Pin<KBox<DeviceNode>>,
    /// USER_DECLARE's `READ_WAITS`: read() waits for a frame.
    read_waits: bool,
    /// What read() fills, kept from one to the next (no allocation per
    /// read); a read() that finds it taken by another makes its own.
    /// Falls back to vmalloc: a read of many launches with their blocks
    /// inline needs more than a few pages.
    read_buf: KVVec<u8>,
}

/// An open control file: a server, and the device it declared.
#[pin_data]
pub(crate) struct ControlFile {
    registry: Arc<Registry>,
    /// Lock order: level 1, the outermost (Documentation/design/locking.md).
    #[pin]
    served: Mutex<Option<Served>>,
}

impl ControlFile {
    /// USER_DECLARE: `/dev/radianceN` appears.
    pub(crate) fn declare(&self, args: &mut uapi::UserDeclare) -> Result {
        let desc = user::describe(args)?;
        let mut served = self.served.lock();
        if served.is_some() {
            return Err(EBUSY);
        }
        let mut made = None;
        let node = Registry::create(&self.registry, |serial| {
            let user = User::new(desc, args.flags, serial)?;
            made = Some(user.clone());
            Ok(user as Arc<dyn Gluon>)
        })?;
        let user = made.ok_or(EINVAL)?;
        let device = node.device();
        args.device_index = device.index();
        dev_info!(
            user.dma_device(),
            "radiance{} served by pid {}\n",
            args.device_index,
            kernel::current!().tgid_nr_ns(None)
        );
        *served = Some(Served {
            user,
            node,
            read_waits: args.flags & uapi::user_declare_flags::READ_WAITS != 0,
            read_buf: KVVec::new(),
        });
        Ok(())
    }

    /// `f` of the declared device; ENXIO before USER_DECLARE.
    fn with_served<R>(&self, f: impl FnOnce(&mut Served) -> R) -> Result<R> {
        let mut served = self.served.lock();
        Option::as_mut(&mut *served).map(f).ok_or(ENXIO)
    }

    /// The backend of the declared device; ENXIO before USER_DECLARE.
    pub(crate) fn user(&self) -> Result<Arc<User>> {
        self.with_served(|s| s.user.clone())
    }
}

impl NodeFile for ControlFile {
    type Data = Arc<Registry>;

    fn open(registry: &Arc<Registry>, _kind: FileKind<Self>) -> Result<Arc<Self>> {
        if !crate::raw::capable_sys_admin() {
            return Err(EPERM);
        }
        Arc::pin_init(
            pin_init!(Self {
                registry: registry.clone(),
                served <- new_mutex!(None, "ControlFile::served"),
            }),
            GFP_KERNEL,
        )
    }

    fn ioctl(this: ArcBorrow<'_, Self>, cmd: u32, arg: usize) -> Result<isize> {
        ioctl::dispatch_control(&this, cmd, arg)
    }

    fn mmap(_this: ArcBorrow<'_, Self>, _vma: &VmaNew) -> Result {
        Err(ENODEV)
    }

    /// Whole command frames; when none may be read now, EAGAIN, or waits
    /// for one if the server declared `READ_WAITS` (and the file is not
    /// O_NONBLOCK).
    fn read(this: ArcBorrow<'_, Self>, out: &mut IovIterDest<'_>, nonblock: bool) -> Result<usize> {
        let (user, read_waits, mut frames, dev) = this.with_served(|s| {
            let buf = core::mem::take(&mut s.read_buf);
            (s.user.clone(), s.read_waits, buf, s.node.device().index())
        })?;
        let read = user.read_frames(&mut frames, out.len(), read_waits && !nonblock);
        // Taken from the channel already: a server that hands a bad buffer
        // loses them, and the watchdog resets the device.
        let copied = read.map(|()| out.copy_to_iter(&frames));
        // Kept for the next read(); a declared device stays declared for
        // the file's life, so this finds it.
        let _ = this.with_served(|s| s.read_buf = frames);
        match copied? {
            0 => Err(EFAULT),
            n => {
                trace::user_io(dev, true, n);
                Ok(n)
            }
        }
    }

    /// Whole responses.
    fn write(this: ArcBorrow<'_, Self>, src: &mut IovIterSource<'_>) -> Result<usize> {
        let (user, dev) = this.with_served(|s| (s.user.clone(), s.node.device().index()))?;
        let want = src.len().min(MAX_WRITE);
        let mut stack = [0u8; STACK_WRITE];
        let mut heap;
        let bytes = match stack.get_mut(..want) {
            Some(bytes) => bytes,
            None => {
                heap = KVec::from_elem(0u8, want, GFP_KERNEL)?;
                &mut heap[..]
            }
        };
        let mut n = src.copy_from_iter(bytes);
        if n < want {
            // The caller's buffer faulted: the whole responses before the
            // fault count, and none is EFAULT, as for any write(2).
            n -= n % RESPONSE_SIZE;
            if n == 0 {
                return Err(EFAULT);
            }
        }
        let taken = user.write_responses(bytes.get(..n).ok_or(EFAULT)?)?;
        // What was not taken goes back to the caller, who sees a short write.
        if taken < n {
            // SAFETY: `n - taken` of the bytes just copied from `src` are given back.
            unsafe { src.revert(n - taken) };
        }
        trace::user_io(dev, false, taken);
        Ok(taken)
    }

    const POLLS: bool = true;

    fn poll(this: ArcBorrow<'_, Self>, file: &File, table: &PollTable<'_>) -> u32 {
        match this.user() {
            Ok(user) => {
                table.register_wait(file, user.ready());
                user.poll_mask()
            }
            Err(_) => kernel::bindings::POLLERR,
        }
    }

    /// The server is gone: so is its device.
    fn release(this: Arc<Self>) {
        let served = this.served.lock().take();
        if let Some(served) = served {
            served.user.disconnect();
            served.node.device().lose();
            dev_info!(
                served.user.dma_device(),
                "radiance{}: its server is gone: device removed\n",
                served.node.device().index()
            );
            // Unregisters the node; files still open keep the device.
            drop(served.node);
        }
    }
}
