// SPDX-License-Identifier: GPL-2.0

//! A semaphore point that waits for an outside fence (SEM_IMPORT_SYNC_FILE):
//! when the fence signals, the semaphore advances to the point, or fails with
//! the fence's error. The fence mechanics are [`FenceCallback`]'s; this is
//! the policy.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    dma_fence::{
        Fence,
        FenceCallback,
        OnSignal, //
    },
    semaphore::Semaphores,
};

/// Where an import's fence leads: semaphore `handle` of `sems`, to `value`.
pub(crate) struct ImportPoint {
    sems: Arc<Semaphores>,
    handle: u32,
    value: u64,
}

/// One pending import.
pub(crate) type FenceImport = FenceCallback<ImportPoint>;

impl OnSignal for ImportPoint {
    fn signalled(import: Arc<FenceImport>, error: Option<Error>) {
        let point = import.data();
        point.sems.complete_import(point.handle, point.value, error);
        point.sems.untrack_import(&import);
    }
}

/// Arms an import: semaphore `handle` of `sems` advances to `value` when
/// `fence` signals. A fence that has signalled already applies at once.
pub(crate) fn start(sems: &Arc<Semaphores>, handle: u32, value: u64, fence: Fence) -> Result {
    let import = FenceImport::new(
        fence,
        ImportPoint {
            sems: sems.clone(),
            handle,
            value,
        },
    )?;
    sems.track_import(import.clone())?;
    FenceImport::arm(&import).inspect_err(|_| sems.untrack_import(&import))
}
