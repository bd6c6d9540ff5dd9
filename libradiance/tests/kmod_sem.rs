// SPDX-License-Identifier: GPL-2.0 OR MIT

//! libradiance's kmod semaphores against the real module: ignored on the
//! build machine, run with `--ignored` inside the QEMU guest by
//! tools/test.sh.

use radiance::node::Device;
use rustix::io::Errno;
use std::{
    thread,
    time::{Duration, Instant},
};

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn signal_from_another_thread_wakes_a_sleeping_wait() {
    let dev = Device::open("kmod:0").unwrap();
    let sem = dev.create_semaphore(1).unwrap();
    assert_eq!(sem.query().unwrap(), 1);
    thread::scope(|s| {
        s.spawn(|| {
            // Long enough that the waiter has stopped spinning.
            thread::sleep(Duration::from_millis(50));
            sem.signal(4).unwrap();
        });
        sem.wait(&dev, 4, None).unwrap();
    });
    assert_eq!(sem.query().unwrap(), 4);
    // Already reached: returns from the value page, without sleeping.
    sem.wait(&dev, 2, Some(Instant::now())).unwrap();
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn a_wait_ends_at_its_deadline_not_before() {
    let dev = Device::open("kmod:0").unwrap();
    let sem = dev.create_semaphore(0).unwrap();
    let deadline = Instant::now() + Duration::from_millis(80);
    let err = sem.wait(&dev, 1, Some(deadline)).unwrap_err();
    assert!(matches!(err, radiance::Error::DeadlineExceeded), "{err}");
    assert!(Instant::now() >= deadline);
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn failure_reaches_query_and_waiters() {
    let dev = Device::open("kmod:0").unwrap();
    let sem = dev.create_semaphore(0).unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| sem.wait(&dev, 10, None));
        thread::sleep(Duration::from_millis(50));
        sem.fail(Errno::IO).unwrap();
        let err = waiter.join().unwrap().unwrap_err();
        assert!(err.to_string().contains(&Errno::IO.to_string()), "{err}");
    });
    let err = sem.query().unwrap_err();
    assert!(err.to_string().contains("semaphore failed"), "{err}");
    assert!(sem.signal(11).is_err());
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn wait_any_says_which() {
    let dev = Device::open("kmod:0").unwrap();
    let a = dev.create_semaphore(0).unwrap();
    let b = dev.create_semaphore(0).unwrap();
    b.signal(3).unwrap();
    let which = dev.wait_semaphores(&[(&a, 1), (&b, 3)], true, Some(Instant::now())).unwrap();
    assert_eq!(which, Some(1));
    let err = dev.wait_semaphores(&[(&a, 1), (&b, 3)], false, Some(Instant::now())).unwrap_err();
    assert!(matches!(err, radiance::Error::DeadlineExceeded), "{err}");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn sync_files_carry_points_between_devices() {
    use std::os::fd::AsFd;
    let (a, b) = (Device::open("kmod:0").unwrap(), Device::open("kmod:1").unwrap());
    let (src, dst) = (a.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap());
    let fence = src.export_sync_file(3).unwrap();
    dst.import_sync_file(fence.as_fd(), 10).unwrap();
    assert_eq!(dst.query().unwrap(), 0, "not before the point is reached");
    src.signal(3).unwrap();
    dst.wait(&b, 10, Some(Instant::now() + Duration::from_secs(5))).unwrap();
    // A failure travels the same way.
    let (src2, dst2) = (a.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap());
    dst2.import_sync_file(src2.export_sync_file(1).unwrap().as_fd(), 1).unwrap();
    src2.fail(Errno::NOLINK).unwrap();
    let err = dst2.wait(&b, 1, Some(Instant::now() + Duration::from_secs(5))).unwrap_err();
    assert!(err.to_string().contains(&Errno::NOLINK.to_string()), "{err}");
}
