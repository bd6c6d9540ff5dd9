// SPDX-License-Identifier: GPL-2.0 OR MIT

//! libradiance's kmod buffer objects against the real module. They need
//! `/dev/radiance0` and `/dev/radiance1` (radiance.ko with
//! emulated_devices=2), so they are ignored on the build machine and run
//! with `--ignored` inside the QEMU guest by tools/test.sh.

use radiance::{
    node::{map_dma_buf, Device, Placement},
    Error, StatusCode,
};
use std::os::fd::AsFd;

/// A value from the device's debugfs `mem` file.
fn mem_stat(key: &str) -> u64 {
    let text = std::fs::read_to_string("/sys/kernel/debug/radiance/radiance0/mem").expect("debugfs mem");
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{key} missing from debugfs mem"))
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn vram_bo_map_export_and_read_back() {
    let dev = Device::open("kmod:0").unwrap();
    if dev.info().caps & radiance_uapi::caps::VRAM_MAPPABLE == 0 {
        // The CPU cannot reach this device's VRAM (gluon-sim mode).
        let e = dev.create_bo(10_000, Placement::Vram, true).unwrap_err();
        assert_eq!(e.status(), StatusCode::Unimplemented, "{e}");
        assert!(e.to_string().contains("os error 95"), "EOPNOTSUPP: {e}");
        return;
    }
    let bo = dev.create_bo(10_000, Placement::Vram, true).unwrap();
    assert_eq!(bo.placement(), Placement::Vram);
    assert_eq!(bo.size(), 12_288, "rounded to whole pages");
    assert!(bo.device_address() >= 65_536 && bo.device_address() % 4096 == 0);
    let mut map = bo.map().unwrap();
    assert!(map.iter().all(|&b| b == 0), "fresh VRAM reads as zeros");
    for (i, b) in map.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let dmabuf = bo.export_dma_buf().unwrap();
    let seen = map_dma_buf(dmabuf.as_fd()).unwrap();
    assert_eq!(seen.len(), map.len());
    assert!(seen.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn host_bo_export_imports_on_another_device() {
    let a = Device::open("kmod:0").unwrap();
    let b = Device::open("kmod:1").unwrap();
    let bo = a.create_bo(1 << 20, Placement::Host, true).unwrap();
    assert_eq!(bo.device_address(), 0, "host DMA addresses stay in the kernel");
    let dmabuf = bo.export_dma_buf().unwrap();
    let imported = b.import_dma_buf(dmabuf.as_fd()).unwrap();
    assert_eq!(imported.placement(), Placement::Host);
    assert_eq!(imported.size(), 1 << 20);
    assert!(matches!(imported.map(), Err(Error::InvalidArgument(_))), "imports are not mappable");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn dropping_a_bo_frees_it() {
    let dev = Device::open("kmod:0").unwrap();
    let before = mem_stat("vram_bos");
    let bo = dev.create_bo(4096, Placement::Vram, false).unwrap();
    assert_eq!(mem_stat("vram_bos"), before + 1);
    assert!(matches!(bo.map(), Err(Error::InvalidArgument(_))));
    drop(bo);
    assert_eq!(mem_stat("vram_bos"), before);
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn kernel_errors_map_to_status_codes() {
    let dev = Device::open("kmod:0").unwrap();
    let zero = dev.create_bo(0, Placement::Vram, false).unwrap_err();
    assert_eq!(zero.status(), StatusCode::InvalidArgument, "{zero}");
    let huge = dev.create_bo(1 << 40, Placement::Host, false).unwrap_err();
    assert_eq!(huge.status(), StatusCode::ResourceExhausted, "{huge}");
    let not_a_dmabuf = dev.import_dma_buf(std::io::stdin().as_fd()).unwrap_err();
    assert_eq!(not_a_dmabuf.status(), StatusCode::InvalidArgument, "{not_a_dmabuf}");
}

/// `radctl mem --json` for device 0, as the guest's radctl prints it.
fn radctl_mem() -> serde_json::Value {
    let radctl = std::env::var("RADCTL").unwrap_or_else(|_| "/radctl".into());
    let out = std::process::Command::new(&radctl).args(["mem", "--json", "kmod:0"]).output().unwrap();
    assert!(out.status.success(), "{radctl} mem: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn exhaustion_then_radctl_mem_shows_one_free_block() {
    let dev = Device::open("kmod:0").unwrap();
    let mut bos = Vec::new();
    let err = loop {
        match dev.create_bo(1 << 20, Placement::Vram, false) {
            Ok(bo) => bos.push(bo),
            Err(e) => break e,
        }
    };
    assert_eq!(err.status(), StatusCode::ResourceExhausted, "{err}");
    let full = radctl_mem();
    let total = full["vram"]["total"].as_u64().unwrap();
    assert_eq!(full["vram"]["used"].as_u64().unwrap(), bos.len() as u64 * (1 << 20));
    assert!(full["vram"]["largest_free"].as_u64().unwrap() < 1 << 20);
    assert_eq!(full["vram"]["bos"].as_u64().unwrap(), bos.len() as u64);

    drop(bos);
    let empty = radctl_mem();
    assert_eq!(empty["vram"]["used"], 0);
    assert_eq!(empty["vram"]["free"].as_u64().unwrap(), total);
    assert_eq!(empty["vram"]["largest_free"].as_u64().unwrap(), total);
    assert_eq!(empty["vram"]["free_blocks"], 1);
}
