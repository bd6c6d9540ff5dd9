// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The semaphores of a device, as the module reports them in debugfs
//! (`/sys/kernel/debug/radiance/radianceN/semaphores`): every open file's.

use super::debugfs;
use crate::Result;

/// One semaphore.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SemStats {
    /// The process that opened the file it belongs to.
    pub pid: i32,
    /// Its handle in that file.
    pub handle: u32,
    pub value: u64,
    /// 0, or the positive errno it failed with.
    pub error: u32,
    /// Host SEM_WAITs sleeping on it.
    pub waiters: u32,
    /// Exported sync_file fences still waiting for their value.
    pub fences: u32,
    /// For an alias (SEM_IMPORT_HANDLE, ABI 1.10): the process whose file
    /// holds the semaphore, and its handle there. An alias shows that
    /// semaphore's value and error; its waiters and fences are counted on
    /// the semaphore's own line.
    pub alias_of: Option<(i32, u32)>,
}

impl SemStats {
    /// Reads device `index`'s semaphores; needs root and debugfs.
    pub fn read(index: u32) -> Result<Vec<Self>> {
        debugfs::read(index, "semaphores")?.lines().map(Self::parse).collect()
    }

    fn parse(line: &str) -> Result<Self> {
        Ok(Self {
            pid: debugfs::field(line, "pid")?,
            handle: debugfs::field(line, "sem")?,
            // Values go up to u64::MAX (failed): not through i64.
            value: debugfs::text_field(line, "value")?
                .parse()
                .map_err(|_| crate::Error::InvalidArgument(format!("debugfs: bad value in {line:?}")))?,
            error: debugfs::field(line, "error")?,
            waiters: debugfs::field(line, "waiters")?,
            fences: debugfs::field(line, "fences")?,
            alias_of: match debugfs::text_field(line, "alias_of_sem") {
                Ok(_) => Some((debugfs::field(line, "alias_of_pid")?, debugfs::field(line, "alias_of_sem")?)),
                Err(_) => None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_failed_semaphore() {
        let s = SemStats::parse("pid=7 sem=2 value=18446744073709551615 error=5 waiters=1 fences=3").unwrap();
        assert_eq!(s, SemStats { pid: 7, handle: 2, value: u64::MAX, error: 5, waiters: 1, fences: 3, alias_of: None });
        assert!(SemStats::parse("pid=7 sem=2").is_err());
    }

    #[test]
    fn parses_an_alias() {
        let line = "pid=7 sem=4 value=9 error=0 waiters=0 fences=0 alias_of_pid=8 alias_of_sem=1";
        let s = SemStats::parse(line).unwrap();
        assert_eq!(s, SemStats { pid: 7, handle: 4, value: 9, alias_of: Some((8, 1)), ..Default::default() });
        assert!(SemStats::parse("pid=7 sem=4 value=9 error=0 waiters=0 fences=0 alias_of_sem=1").is_err());
    }
}
