// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Reading the module's debugfs files (`/sys/kernel/debug/radiance/radianceN/`).

use crate::{Error, Result};

/// The text of file `name` of device `index`; needs root and debugfs.
pub(super) fn read(index: u32, name: &str) -> Result<String> {
    let path = format!("/sys/kernel/debug/radiance/radiance{index}/{name}");
    std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("{path} (needs root and debugfs: mount -t debugfs none /sys/kernel/debug)"), &e))
}

/// The value of `key` in a line of `key=value` pairs (decimal, or hex with
/// `0x`).
pub(super) fn field<T: TryFrom<i64>>(line: &str, key: &str) -> Result<T> {
    let text = text_field(line, key)?;
    let value = match text.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    value
        .ok()
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| Error::InvalidArgument(format!("debugfs: bad {key}={text}")))
}

/// The value of `key`, a counter an older module's debugfs lacks: None if
/// the line has no `key` at all.
pub(super) fn counter(line: &str, key: &str) -> Result<Option<u64>> {
    match text_field(line, key) {
        Ok(_) => field(line, key).map(Some),
        Err(_) => Ok(None),
    }
}

/// The text of `key` in a line of `key=value` pairs.
pub(super) fn text_field<'a>(line: &'a str, key: &str) -> Result<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .ok_or_else(|| Error::InvalidArgument(format!("debugfs: no `{key}` in {line:?} (module too old?)")))
}
