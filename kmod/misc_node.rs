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

use core::marker::PhantomData;
use kernel::{
    fs::File,
    miscdevice::{
        MiscDevice,
        MiscDeviceOptions,
        MiscDeviceRegistration, //
    },
    mm::virt::VmaNew,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
};

/// What a node's open files are, and the operations on them.
pub(crate) trait NodeFile: Sized + Send + Sync + 'static {
    /// What the node keeps for `open`.
    type Data: Send + Sync;

    /// A file of the node is being opened.
    fn open(data: &Self::Data) -> Result<Arc<Self>>;

    fn ioctl(this: ArcBorrow<'_, Self>, cmd: u32, arg: usize) -> Result<isize>;

    fn mmap(this: ArcBorrow<'_, Self>, vma: &VmaNew) -> Result;

    /// The file is closing (its last file reference is gone).
    fn release(this: Arc<Self>);
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

    fn open(_file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Arc<F>> {
        let misc = core::ptr::from_ref(misc).cast_mut();
        // SAFETY: every `MiscDeviceRegistration<Files<F>>` is a `Node<F>`'s `misc` (`Files` is private,
        // only `Node::new` registers one), alive: `misc_open()` holds the misc lock during `open`.
        let node = unsafe { &*kernel::container_of!(misc, Node<F>, misc) };
        F::open(&node.data)
    }

    fn ioctl(this: ArcBorrow<'_, F>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        F::ioctl(this, cmd, arg)
    }

    fn mmap(this: ArcBorrow<'_, F>, _file: &File, vma: &VmaNew) -> Result {
        F::mmap(this, vma)
    }

    fn release(this: Arc<F>, _file: &File) {
        F::release(this);
    }
}
