// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The conformance suite against `cuda:0`, where this machine has the CUDA
//! driver and a GPU; elsewhere (CI, the build machine) it skips, saying why.

use radiance::StatusCode;

#[test]
fn suite_against_cuda_0() {
    match radiance::Device::open("cuda:0") {
        Err(e) if matches!(e.status(), StatusCode::Unavailable | StatusCode::NotFound) => {
            eprintln!("skipping the suite against cuda:0: {e}");
            return;
        }
        opened => drop(opened.expect("opening cuda:0")),
    }
    let mut ktap = Vec::new();
    let summary = radiance_cts::run("cuda:0", "", &mut ktap);
    print!("{}", String::from_utf8_lossy(&ktap));
    assert_eq!(summary.failed, 0, "{summary:?}");
}
