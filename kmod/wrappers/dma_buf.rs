// SPDX-License-Identifier: GPL-2.0

//! dma-buf: exporting the driver's memory to other drivers and processes,
//! and importing anyone's dma-buf as host memory for the device.
//!
//! 7.3 has no Rust abstraction for dma-buf; this file is the small wrapper
//! over `kernel::bindings` that the rest of the driver uses through
//! [`export`] and [`Import`]. It imports nothing else of the driver: what it
//! exports is any [`Exportable`], and the module that owns the buffers is
//! passed in.
//!
//! An exported dma-buf owns a reference to its object (in `dma_buf::priv`),
//! so the memory outlives the exporter's own handles until the last dma-buf
//! reference drops; `release` gives the reference back.

use core::{
    marker::PhantomData,
    ptr::{
        null_mut,
        NonNull, //
    },
};
use kernel::{
    bindings,
    device::Device,
    error::{
        from_err_ptr,
        to_result, //
    },
    mm::virt::{
        VmaMixedMap,
        VmaNew, //
    },
    new_mutex,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        Arc,
        ArcBorrow,
        Mutex, //
    },
    types::ForeignOwnable,
    ThisModule,
};

use crate::{
    pending_fd::PendingFd,
    sg_table::{
        DmaSgTable,
        Handover,
        MappedTable, //
    },
};

// Exported by mm/vmalloc.c; 7.3's bindings do not include them.
extern "C" {
    // `struct page **`, as `void **`: `struct page` is opaque to bindgen.
    fn vm_map_ram(pages: *const *mut c_void, count: u32, node: i32) -> *mut c_void;
    fn vm_unmap_ram(mem: *const c_void, count: u32);
}

/// Memory that can back a dma-buf: whole pages that stay allocated while the
/// object lives.
pub(crate) trait Exportable: Send + Sync + 'static {
    /// Bytes; a multiple of the page size.
    fn size(&self) -> u64;

    /// Calls `each` with pages `first .. first + count`, in order.
    fn pages(&self, first: usize, count: usize, each: &mut dyn FnMut(&Page) -> Result) -> Result;

    /// Maps the pages from `first` on into all of `vma`.
    fn map(&self, vma: &VmaMixedMap, first: usize) -> Result;
}

/// Exports `obj` as a new dma-buf, read-write, under an fd reserved
/// (close-on-exec if asked) for the caller to install; the buffer holds
/// `owner` while it lives. EINVAL unless `obj` is whole pages.
pub(crate) fn export<T: Exportable>(
    obj: Arc<T>,
    owner: &ThisModule,
    cloexec: bool,
) -> Result<PendingFd> {
    let size = usize::try_from(obj.size())?;
    if size == 0 || size % PAGE_SIZE != 0 {
        return Err(EINVAL);
    }
    let reservation = PendingFd::reserve(cloexec)?;
    let info = bindings::dma_buf_export_info {
        exp_name: c"radiance".as_char_ptr(),
        owner: owner.as_ptr(),
        ops: Exporter::<T>::OPS,
        size,
        flags: bindings::O_RDWR as i32,
        // The core gives the buffer its own reservation object.
        resv: null_mut(),
        priv_: obj.into_foreign(),
    };
    // SAFETY: `info` is complete, `ops` is static, and `priv_` is a
    // reference to `obj` that `release` (or the error path) takes back.
    let dmabuf = match from_err_ptr(unsafe { bindings::dma_buf_export(&info) }) {
        Ok(dmabuf) => dmabuf,
        Err(e) => {
            // SAFETY: the export failed, so nothing else took `priv_`.
            drop(unsafe { <Arc<T> as ForeignOwnable>::from_foreign(info.priv_) });
            return Err(e);
        }
    };
    // SAFETY: `dmabuf` was just exported; our reference to it is the one
    // reference to its file (dma_buf_put is an fput of that file).
    let file = unsafe { (*dmabuf).file };
    // dma_buf_export makes the file with the buffer: never NULL.
    let file = NonNull::new(file).ok_or(ENOMEM)?;
    // SAFETY: `file` is live and its reference is ours to hand over.
    Ok(unsafe { PendingFd::new(reservation, file) })
}

/// The exporter callbacks for buffers over a `T`.
struct Exporter<T>(PhantomData<T>);

impl<T: Exportable> Exporter<T> {
    const OPS: &'static bindings::dma_buf_ops = &bindings::dma_buf_ops {
        // Any device may attach: the memory is system pages.
        attach: None,
        detach: None,
        // The pages never move, so importers need not pin them.
        pin: None,
        unpin: None,
        map_dma_buf: Some(Self::map_dma_buf),
        unmap_dma_buf: Some(Self::unmap_dma_buf),
        release: Some(Self::release),
        begin_cpu_access: Some(Self::cpu_access),
        end_cpu_access: Some(Self::cpu_access),
        mmap: Some(Self::mmap),
        vmap: Some(Self::vmap),
        vunmap: Some(Self::vunmap),
    };

    /// The object behind one of our dma-bufs.
    ///
    /// # Safety
    ///
    /// `dmabuf` is a live dma-buf exported by [`export`] for a `T`.
    unsafe fn obj<'a>(dmabuf: *mut bindings::dma_buf) -> ArcBorrow<'a, T> {
        // SAFETY: `export` stored an `Arc<T>` in `priv_`, which `release`
        // takes back only after the last user of the buffer is gone.
        unsafe { <Arc<T> as ForeignOwnable>::borrow((*dmabuf).priv_) }
    }

    /// Page count of a live dma-buf (its size is whole pages).
    ///
    /// # Safety
    ///
    /// `dmabuf` is live.
    unsafe fn page_count(dmabuf: *mut bindings::dma_buf) -> usize {
        // SAFETY: the caller promises `dmabuf` is live; `size` never changes.
        unsafe { (*dmabuf).size / PAGE_SIZE }
    }

    /// Raw pointers to all of the object's pages, for C; as many as a BO
    /// has, so possibly more than kmalloc serves.
    fn page_ptrs(obj: &T, count: usize) -> Result<KVVec<*mut bindings::page>> {
        let mut ptrs = KVVec::with_capacity(count, GFP_KERNEL)?;
        obj.pages(0, count, &mut |p| Ok(ptrs.push(p.as_ptr(), GFP_KERNEL)?))?;
        Ok(ptrs)
    }

    /// `map_dma_buf`: an sg table of the BO's pages, mapped for the importer.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn map_dma_buf(
        attach: *mut bindings::dma_buf_attachment,
        dir: bindings::dma_data_direction,
    ) -> *mut bindings::sg_table {
        // SAFETY: the core calls this with a live attachment of a live buffer.
        let (dmabuf, dev) = unsafe { ((*attach).dmabuf, (*attach).dev) };
        // SAFETY: the core calls this only for buffers `export` made for a
        // `T`, and the live attachment keeps its buffer live.
        let (obj, count) = unsafe { (Self::obj(dmabuf), Self::page_count(dmabuf)) };
        // The pages stay allocated while the object lives, and the buffer holds
        // it until `release`, which comes after every `unmap_dma_buf`.
        let table = Self::page_ptrs(&obj, count).and_then(|mut pages| {
            // SAFETY: the pages live while the object does, which the buffer holds until `release`,
            // after the `unmap_dma_buf` that frees this table; `dev` lives while it is attached.
            unsafe { DmaSgTable::new(Device::from_raw(dev), &mut pages, count * PAGE_SIZE, dir) }
        });
        match table {
            Ok(table) => DmaSgTable::into_raw(table),
            Err(e) => e.to_ptr(),
        }
    }

    /// `unmap_dma_buf`: undoes [`map_dma_buf`].
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn unmap_dma_buf(
        _attach: *mut bindings::dma_buf_attachment,
        sgt: *mut bindings::sg_table,
        _dir: bindings::dma_data_direction,
    ) {
        // SAFETY: `sgt` came from `map_dma_buf` and the importer is done with it.
        drop(unsafe { DmaSgTable::from_raw(sgt) });
    }

    /// `release`: the last reference to the buffer is gone.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn release(dmabuf: *mut bindings::dma_buf) {
        // SAFETY: `export` put an `Arc<T>` here and nothing uses it any more.
        drop(unsafe { <Arc<T> as ForeignOwnable>::from_foreign((*dmabuf).priv_) });
    }

    /// `mmap`: maps the pages; the core has checked offset and length.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn mmap(
        dmabuf: *mut bindings::dma_buf,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        // SAFETY: the core calls this for a live buffer of ours, with a VMA
        // being set up under the mmap lock.
        let (obj, vma) = unsafe { (Self::obj(dmabuf), VmaNew::from_raw(vma)) };
        let first = crate::raw::vma_pgoff(vma);
        if vma.executable() {
            return EPERM.to_errno();
        }
        let mapped = vma.try_clear_mayexec().and_then(|()| {
            vma.set_dontexpand();
            vma.set_dontdump();
            obj.map(vma.set_mixedmap(), first)
        });
        mapped.err().map_or(0, Error::to_errno)
    }

    /// `vmap`: a kernel mapping of the whole buffer.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn vmap(
        dmabuf: *mut bindings::dma_buf,
        map: *mut bindings::iosys_map,
    ) -> c_int {
        // SAFETY: the core calls this for a live buffer of ours.
        let (obj, count) = unsafe { (Self::obj(dmabuf), Self::page_count(dmabuf)) };
        let pages = match Self::page_ptrs(&obj, count) {
            Ok(pages) => pages,
            Err(e) => return e.to_errno(),
        };
        let node = bindings::NUMA_NO_NODE;
        // SAFETY: the pages live while the object does, which the buffer holds until `release`;
        // `vunmap` undoes this before that.
        let vaddr = unsafe { vm_map_ram(pages.as_ptr().cast(), count as u32, node) };
        if vaddr.is_null() {
            return ENOMEM.to_errno();
        }
        // SAFETY: `map` is the core's to fill; system memory, not I/O memory.
        unsafe {
            (*map).__bindgen_anon_1.vaddr = vaddr;
            (*map).is_iomem = false;
        }
        0
    }

    /// `vunmap`: undoes [`vmap`].
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn vunmap(dmabuf: *mut bindings::dma_buf, map: *mut bindings::iosys_map) {
        // SAFETY: `map` holds what `vmap` returned for this live buffer.
        unsafe {
            vm_unmap_ram(
                (*map).__bindgen_anon_1.vaddr,
                Self::page_count(dmabuf) as u32,
            )
        };
    }

    /// `begin_cpu_access` / `end_cpu_access`: nothing to do. What is exported
    /// here (emulated VRAM, pinned host pages) is ordinary cache-coherent
    /// system memory, and the importers' DMA mappings are made with the DMA
    /// API, which keeps them coherent on the architectures we build for. A
    /// non-coherent board backend would sync its attachments here.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core, with live arguments, for a buffer exported
    /// by [`export`] for a `T`.
    unsafe extern "C" fn cpu_access(
        _dmabuf: *mut bindings::dma_buf,
        _dir: bindings::dma_data_direction,
    ) -> c_int {
        0
    }
}

/// Someone's dma-buf, attached to and mapped for our device.
///
/// # Invariants
///
/// `dmabuf` is a reference we hold; `attach` attaches it to the device that
/// `table` is mapped for; `table` is its mapping, unmapped on drop before
/// detaching and putting. `cpu`, once set, is a kernel mapping of all of
/// the buffer from `dma_buf_vmap_unlocked`, undone on drop first.
pub(crate) struct Import {
    dmabuf: *mut bindings::dma_buf,
    attach: *mut bindings::dma_buf_attachment,
    table: MappedTable,
    size: u64,
    /// The CPU's mapping, made on first use; held by every CPU access.
    /// Lock order: level 6 (Documentation/design/locking.md).
    cpu: Pin<KBox<Mutex<Option<CpuMap>>>>,
}

/// A kernel virtual mapping of an import (system memory, not I/O memory).
struct CpuMap(bindings::iosys_map);

// SAFETY: the dma-buf API may be called from any thread; `Import` only
// keeps pointers that it alone releases, in `drop`.
unsafe impl Send for Import {}
// SAFETY: a kernel mapping may be used and undone from any thread.
unsafe impl Send for CpuMap {}
// SAFETY: `&Import` gives read-only access.
unsafe impl Sync for Import {}

/// Imports are mapped both ways: the device reads and writes them.
const IMPORT_DIR: bindings::dma_data_direction = bindings::dma_data_direction::DMA_BIDIRECTIONAL;

impl Import {
    /// Takes a reference to the dma-buf behind `fd` (EBADF if `fd` is not
    /// open, EINVAL if it is no dma-buf) and maps it for `dev`.
    pub(crate) fn new(dev: &Device, fd: i32) -> Result<Self> {
        // Allocated before the buffer is taken: past the mapping, a failure
        // would have to undo it (the fail-nth sweep found that leak).
        let cpu = KBox::pin_init(new_mutex!(None, "Import::cpu"), GFP_KERNEL)?;
        // SAFETY: any fd value is fine; the core checks it.
        let dmabuf = from_err_ptr(unsafe { bindings::dma_buf_get(fd) })?;
        // SAFETY: our reference to a live buffer; `dev` is live.
        let attach = match from_err_ptr(unsafe {
            bindings::dma_buf_attach(dmabuf, crate::raw::device(dev))
        }) {
            Ok(attach) => attach,
            Err(e) => {
                // SAFETY: our reference, not used after this.
                unsafe { bindings::dma_buf_put(dmabuf) };
                return Err(e);
            }
        };
        // SAFETY: a fresh attachment of our buffer.
        let sgt = match from_err_ptr(unsafe {
            bindings::dma_buf_map_attachment_unlocked(attach, IMPORT_DIR)
        }) {
            Ok(sgt) => sgt,
            Err(e) => {
                // SAFETY: `attach` is our fresh attachment of `dmabuf`, and
                // the reference to `dmabuf` is ours; neither is used after.
                unsafe {
                    bindings::dma_buf_detach(dmabuf, attach);
                    bindings::dma_buf_put(dmabuf);
                }
                return Err(e);
            }
        };
        // SAFETY: mapped for `dev` in `IMPORT_DIR` just now, and unmapped
        // only in `drop`, which drops the table's borrow with it.
        let table = unsafe { MappedTable::new(sgt, dev, IMPORT_DIR) };
        // SAFETY: `dmabuf` is live while we hold it; its size never changes.
        let size = unsafe { (*dmabuf).size } as u64;
        // INVARIANT: got, attached and mapped above; no CPU mapping yet.
        Ok(Self {
            dmabuf,
            attach,
            table,
            size,
            cpu,
        })
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Our device's view: `(DMA address, length)` segments, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.table.segments()
    }

    /// Hands `[offset, offset + len)` to the device or back to the CPU.
    pub(crate) fn sync(&self, offset: u64, len: u64, to: Handover) -> Result {
        self.table.sync(offset, len, to)
    }

    /// Copies `dst.len()` bytes at `offset` into `dst`, on the CPU.
    pub(crate) fn read(&self, offset: u64, dst: &mut [u8]) -> Result {
        let dir = bindings::dma_data_direction::DMA_FROM_DEVICE;
        self.with_cpu(offset, dst.len(), dir, |at| {
            // SAFETY: `at` maps `dst.len()` bytes of the buffer (`with_cpu` checked), and the CPU
            // mapping's lock, held, keeps every other Rust access to them out.
            unsafe { core::ptr::copy_nonoverlapping(at, dst.as_mut_ptr(), dst.len()) }
        })
    }

    /// Copies `src` to `offset`, on the CPU.
    pub(crate) fn write(&self, offset: u64, src: &[u8]) -> Result {
        let dir = bindings::dma_data_direction::DMA_TO_DEVICE;
        self.with_cpu(offset, src.len(), dir, |at| {
            // SAFETY: `at` maps `src.len()` bytes of the buffer (`with_cpu` checked), and the CPU
            // mapping's lock, held, keeps every other Rust access to them out.
            unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), at, src.len()) }
        })
    }

    /// Runs `f` with the CPU's address of byte `offset`, which `len` bytes
    /// follow, inside the exporter's CPU-access brackets for `dir`; maps the
    /// buffer first if it is not. EINVAL past the end; the exporter's error
    /// if it cannot be mapped, EOPNOTSUPP if it is I/O memory.
    fn with_cpu(
        &self,
        offset: u64,
        len: usize,
        dir: bindings::dma_data_direction,
        f: impl FnOnce(*mut u8),
    ) -> Result {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(EINVAL);
        }
        let mut cpu = self.cpu.lock();
        if cpu.is_none() {
            let mut map = bindings::iosys_map::default();
            // SAFETY: we hold a reference to the live buffer; `map` is ours
            // to fill.
            to_result(unsafe { bindings::dma_buf_vmap_unlocked(self.dmabuf, &mut map) })?;
            // System memory only: I/O memory is not plain bytes.
            if map.is_iomem {
                // SAFETY: mapped just above, and used by nobody else.
                unsafe { bindings::dma_buf_vunmap_unlocked(self.dmabuf, &mut map) };
                return Err(EOPNOTSUPP);
            }
            *cpu = Some(CpuMap(map));
        }
        let Some(mapping) = &*cpu else {
            return Err(EINVAL);
        };
        // SAFETY: `vaddr` is the member `dma_buf_vmap_unlocked` sets for
        // system memory (`is_iomem` is false).
        let base = unsafe { mapping.0.__bindgen_anon_1.vaddr }.cast::<u8>();
        // SAFETY: the buffer is live while we hold it.
        to_result(unsafe { bindings::dma_buf_begin_cpu_access(self.dmabuf, dir) })?;
        // SAFETY: `[offset, offset + len)` is inside the buffer (checked
        // above), all of which `base` maps.
        f(unsafe { base.add(offset as usize) });
        // SAFETY: the buffer is live while we hold it, and `begin`
        // succeeded.
        to_result(unsafe { bindings::dma_buf_end_cpu_access(self.dmabuf, dir) })
    }
}

impl Drop for Import {
    fn drop(&mut self) {
        if let Some(mut mapping) = self.cpu.lock().take() {
            // SAFETY: `dma_buf_vmap_unlocked` made the mapping (type
            // invariant), and nothing uses it any more.
            unsafe { bindings::dma_buf_vunmap_unlocked(self.dmabuf, &mut mapping.0) };
        }
        // SAFETY: by the type invariant: mapped, attached and held by us.
        unsafe {
            bindings::dma_buf_unmap_attachment_unlocked(
                self.attach,
                self.table.as_raw(),
                IMPORT_DIR,
            );
            bindings::dma_buf_detach(self.dmabuf, self.attach);
            bindings::dma_buf_put(self.dmabuf);
        }
    }
}
