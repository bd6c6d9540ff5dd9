// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `hsa:0` with the real ROCr (Debian's `libhsa-runtime64.so.1`, which
//! `tools/test.sh` installs) on a machine without `/dev/kfd`: opening fails
//! with one clear error, through the Rust API and the C ABI alike, leaves no
//! file descriptor or thread behind, and enumeration lists no hsa device.
//! Where `/dev/kfd` exists it cannot check that and fails, saying so: a
//! test that could not run is never a pass. The check on such a machine is
//! the conformance suite against `hsa:0` (tests/cts/tests/hsa.rs, with
//! `--include-ignored`).

use radiance::{Device, StatusCode};
use std::{
    ffi::{c_char, c_void, CStr},
    path::Path,
    ptr,
};

// The C ABI, as the IREE HAL driver calls it (`include/libradiance.h`).
extern "C" {
    fn radiance_device_open(uri: *const c_char, out_device: *mut *mut c_void) -> *mut c_void;
    fn radiance_status_code(status: *mut c_void) -> u32;
    fn radiance_status_message(status: *mut c_void) -> *const c_char;
    fn radiance_status_free(status: *mut c_void);
}

/// Entries of a /proc/self directory.
fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).map(Iterator::count).unwrap_or(0)
}

/// Opens `uri` through the C ABI: the status code and message.
fn open_through_c(uri: &CStr) -> (u32, String) {
    let mut device = ptr::null_mut();
    // SAFETY: a NUL-terminated URI and a writable out-parameter.
    let status = unsafe { radiance_device_open(uri.as_ptr(), &mut device) };
    assert!(!status.is_null(), "{uri:?} opened");
    assert!(device.is_null());
    // SAFETY: a status the library returned, freed once, after its message
    // was copied.
    unsafe {
        let message = CStr::from_ptr(radiance_status_message(status)).to_string_lossy().into_owned();
        let code = radiance_status_code(status);
        radiance_status_free(status);
        (code, message)
    }
}

#[test]
fn hsa_0_without_kfd_fails_cleanly_and_leaks_nothing() {
    assert!(
        !Path::new(radiance::hsa::KFD).exists(),
        "{} exists: this test needs a machine without it; run the conformance suite against hsa:0 instead",
        radiance::hsa::KFD
    );
    let (fds, threads) = (count("/proc/self/fd"), count("/proc/self/task"));
    for _ in 0..3 {
        let e = Device::open("hsa:0").unwrap_err();
        assert_eq!(e.status(), StatusCode::Unavailable, "{e}");
        let text = e.to_string();
        // One line: the URI, ROCr's call and status string, and the node.
        assert!(!text.contains('\n'), "{text}");
        assert!(text.starts_with("hsa:0: ROCr could not start: hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES"), "{text}");
        assert!(
            text.ends_with(
                "/dev/kfd is missing: no AMD GPU with the amdgpu kernel driver's compute interface (KFD) here"
            ),
            "{text}"
        );
    }
    assert_eq!(Device::open("hsa:7").unwrap_err().status(), StatusCode::Unavailable);
    let (code, message) = open_through_c(c"hsa:0");
    assert_eq!(code, StatusCode::Unavailable as u32, "{message}");
    assert!(message.contains("/dev/kfd"), "{message}");
    let (code, message) = open_through_c(c"hsa:zero");
    assert_eq!(code, StatusCode::InvalidArgument as u32, "{message}");
    assert!(Device::enumerate().iter().all(|uri| !uri.starts_with("hsa:")));
    assert_eq!(
        (count("/proc/self/fd"), count("/proc/self/task")),
        (fds, threads),
        "file descriptors or threads left behind"
    );
}
