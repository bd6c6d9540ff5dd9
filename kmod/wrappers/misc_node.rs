// SPDX-License-Identifier: GPL-2.0

//! A misc device node whose files are opened with the node's own data.
//!
//! 7.3's `MiscDeviceRegistration` carries nothing for `open` but itself, and
//! a driver with several nodes of one file type needs to know which node was
//! opened. [`Node`] keeps its data beside the registration and hands it to
//! [`NodeFile::open`]. Its registration's file type ([`Files`]) is private to
//! this file and only [`Node::new`] registers one, so every such
//! registration is the `misc` field of a `Node`: stepping from one to the
//! other is sound, and no other file needs to know how.
//!
//! 7.3's `MiscDevice` has no `poll` either. A node whose files poll
//! ([`NodeFile::POLLS`]) gives each file, as it opens, a copy of the misc
//! file operations with `poll` added, as `misc_open()` itself replaces a
//! file's operations with the driver's.

use core::marker::PhantomData;
use kernel::{
    bindings,
    fs::{
        File,
        Kiocb,
        LocalFile, //
    },
    iov::{
        IovIterDest,
        IovIterSource, //
    },
    miscdevice::{
        MiscDevice,
        MiscDeviceOptions,
        MiscDeviceRegistration, //
    },
    mm::virt::VmaNew,
    prelude::*,
    sync::{
        poll::PollTable,
        Arc,
        ArcBorrow, //
    },
    types::ForeignOwnable,
};

/// What a node's open files are, and the operations on them.
pub(crate) trait NodeFile: Sized + Send + Sync + 'static {
    /// What the node keeps for `open`.
    type Data: Send + Sync;

    /// A file of the node is being opened; `kind` recognises other files
    /// of this type (see [`FileKind::file_of`]).
    fn open(data: &Self::Data, kind: FileKind<Self>) -> Result<Arc<Self>>;

    fn ioctl(this: ArcBorrow<'_, Self>, cmd: u32, arg: usize) -> Result<isize>;

    fn mmap(this: ArcBorrow<'_, Self>, vma: &VmaNew) -> Result;

    /// read(); EINVAL unless the file type reads. `nonblock`: the file is
    /// O_NONBLOCK, so the read must not wait.
    fn read(
        _this: ArcBorrow<'_, Self>,
        _out: &mut IovIterDest<'_>,
        _nonblock: bool,
    ) -> Result<usize> {
        Err(EINVAL)
    }

    /// write(); EINVAL unless the file type writes.
    fn write(_this: ArcBorrow<'_, Self>, _src: &mut IovIterSource<'_>) -> Result<usize> {
        Err(EINVAL)
    }

    /// Whether the files poll: then [`NodeFile::poll`] is their `poll`.
    const POLLS: bool = false;

    /// poll(): registers the file's wait queues with `table` and returns
    /// the `POLL*` events ready now.
    fn poll(_this: ArcBorrow<'_, Self>, _file: &File, _table: &PollTable<'_>) -> u32 {
        0
    }

    /// The file is closing (its last file reference is gone).
    fn release(this: Arc<Self>);
}

/// What makes an open file one of `F`'s, of any `Node<F>`: its file
/// operations. `misc_open()` gives a file its registration's, which every
/// registration of `Files<F>` shares (built by one `register`), and
/// [`Files::open`] replaces them alike for all files of `F`. A file keeps
/// its own to recognise its kind in a descriptor it is handed, rather than
/// comparing with a new reference to the operations, which need not be
/// the same address.
pub(crate) struct FileKind<F> {
    fops: *const bindings::file_operations,
    _file: PhantomData<F>,
}

// SAFETY: the pointer is only compared, never followed.
unsafe impl<F> Send for FileKind<F> {}
// SAFETY: the pointer is only compared, never followed.
unsafe impl<F> Sync for FileKind<F> {}

impl<F: NodeFile> FileKind<F> {
    /// The open file behind `fd` if it is of this kind: a file of any
    /// node of `F` (one driver's devices are one kind of file). EBADF: no
    /// such descriptor; EINVAL: some other kind of file.
    pub(crate) fn file_of(&self, fd: i32) -> Result<Arc<F>> {
        let file = LocalFile::fget(u32::try_from(fd).map_err(|_| EBADF)?)?;
        // SAFETY: `file` is a counted reference, valid while held.
        let (f_op, private) = unsafe { ((*file.as_ptr()).f_op, (*file.as_ptr()).private_data) };
        if !core::ptr::eq(f_op, self.fops) {
            return Err(EINVAL);
        }
        // SAFETY: operations of `F`'s files (see `FileKind`): `Files::<F>::open` stored an `Arc<F>`
        // as private data, held until release, which cannot come while `file` is held.
        let this = unsafe { <Arc<F> as ForeignOwnable>::borrow(private) };
        Ok(this.into())
    }
}

/// A registered misc device node with its data; unregistered on drop.
#[pin_data]
pub(crate) struct Node<F: NodeFile> {
    // Fields drop in declaration order: the node goes (no more opens)
    // before `data` does. `new` initialises them the other way round, so
    // the node appears only once `data` is there.
    #[pin]
    misc: MiscDeviceRegistration<Files<F>>,
    data: F::Data,
}

impl<F: NodeFile> Node<F> {
    /// Registers a node named as `opts` says, whose files open with `data`.
    pub(crate) fn new(opts: MiscDeviceOptions, data: F::Data) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            data,
            misc <- MiscDeviceRegistration::register(opts),
        })
    }

    pub(crate) fn data(&self) -> &F::Data {
        &self.data
    }
}

/// The misc device type of a [`Node`]'s registration: private, so that no
/// registration of it exists outside a `Node`.
struct Files<F>(PhantomData<F>);

#[vtable]
impl<F: NodeFile> MiscDevice for Files<F> {
    type Ptr = Arc<F>;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Arc<F>> {
        let misc = core::ptr::from_ref(misc).cast_mut();
        // SAFETY: every `MiscDeviceRegistration<Files<F>>` is a `Node<F>`'s `misc` (`Files` is private,
        // only `Node::new` registers one), alive: `misc_open()` holds the misc lock during `open`.
        let node = unsafe { &*kernel::container_of!(misc, Node<F>, misc) };
        let poll_fops: &'static bindings::file_operations = &PollOps::<F>::FOPS;
        let fops = if F::POLLS {
            core::ptr::from_ref(poll_fops)
        } else {
            // SAFETY: the file is valid during its open; `misc_open()` set its operations.
            unsafe { (*file.as_ptr()).f_op }
        };
        let this = F::open(
            &node.data,
            FileKind {
                fops,
                _file: PhantomData,
            },
        )?;
        if F::POLLS {
            // `PollOps::FOPS` has this module as owner, like the operations it replaces, so the
            // module reference that `misc_open()` took is dropped with it.
            // SAFETY: the file is being opened, which may set its operations (as `misc_open()` did).
            unsafe { (*file.as_ptr()).f_op = fops };
        }
        Ok(this)
    }

    fn ioctl(this: ArcBorrow<'_, F>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        crate::kcov::note_caller();
        F::ioctl(this, cmd, arg)
    }

    fn mmap(this: ArcBorrow<'_, F>, _file: &File, vma: &VmaNew) -> Result {
        F::mmap(this, vma)
    }

    fn read_iter(kiocb: Kiocb<'_, Arc<F>>, out: &mut IovIterDest<'_>) -> Result<usize> {
        crate::kcov::note_caller();
        let nonblock = nonblocking(&kiocb);
        F::read(kiocb.file(), out, nonblock)
    }

    fn write_iter(kiocb: Kiocb<'_, Arc<F>>, src: &mut IovIterSource<'_>) -> Result<usize> {
        crate::kcov::note_caller();
        F::write(kiocb.file(), src)
    }

    fn release(this: Arc<F>, _file: &File) {
        F::release(this);
    }
}

/// Whether the file `kiocb` reads or writes is O_NONBLOCK. (IOCB_NOWAIT
/// never comes: these files do not set FMODE_NOWAIT, so io_uring and
/// RWF_NOWAIT do not pass it.)
fn nonblocking<F: NodeFile>(kiocb: &Kiocb<'_, Arc<F>>) -> bool {
    // SAFETY: the kiocb and its file (`ki_filp`) outlive this call, whose `fdget_pos` is ours.
    let file = unsafe { LocalFile::from_raw_file((*kiocb.as_raw()).ki_filp) };
    file.flags() & kernel::fs::file::flags::O_NONBLOCK != 0
}

/// The misc file operations of [`Files<F>`] with `poll` added.
struct PollOps<F>(PhantomData<F>);

impl<F: NodeFile> PollOps<F> {
    const FOPS: bindings::file_operations = {
        let misc = MiscDeviceOptions { name: c"" }.into_raw::<Files<F>>();
        // SAFETY: `into_raw` points `fops` at the misc vtable of `Files<F>`, a constant.
        let base = unsafe { *misc.fops };
        bindings::file_operations {
            poll: Some(Self::poll),
            ..base
        }
    };

    /// # Safety
    ///
    /// `file` is an open file of a [`Node<F>`] (its operations are `FOPS`,
    /// set only in [`Files::open`]), and `table` is null or a valid poll
    /// table for the duration of the call.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        table: *mut bindings::poll_table,
    ) -> bindings::__poll_t {
        // SAFETY: the misc open stored an `Arc<F>` as the private data of the open file (the
        // caller's promise), which it holds until release, after the last poll.
        let this = unsafe { <Arc<F> as ForeignOwnable>::borrow((*file).private_data) };
        // SAFETY: `file` is valid for the duration of the call, and poll runs in no fdget_pos
        // region.
        let file = unsafe { File::from_raw_file(file) };
        // SAFETY: the caller's promise on `table`.
        let table = unsafe { PollTable::from_raw(table) };
        F::poll(this, file, &table)
    }
}
