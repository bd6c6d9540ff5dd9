// SPDX-License-Identifier: GPL-2.0 OR MIT

//! radctl's errors and the exit status each gives, so that a script can tell
//! a device that computed the wrong bytes from a command that could not run.

use std::process::ExitCode;

/// Exit status of a command that could not do its work (the device, the
/// driver or an argument said no).
const EXIT_FAILURE: u8 = 1;
/// Exit status of `radctl run` when the launched code faulted on the device.
pub(crate) const EXIT_DEVICE_FAULT: u8 = 3;
/// Exit status of `radctl submit` when the data read back is not what the
/// work should have made, and of `radctl run` when the executable says it
/// failed (a riscv-tests `tohost` word).
pub(crate) const EXIT_DATA_ERROR: u8 = 4;

/// Everything that makes a radctl command fail.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Radiance(#[from] radiance::Error),
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// Recording a trace failed (tracefs, the command run meanwhile).
    #[error("trace: {0}")]
    Tracing(String),
    /// `top` could not draw.
    #[error("top: {0}")]
    Top(String),
}

/// radctl's result type.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The exit status this error gives.
    pub(crate) fn exit_status(&self) -> u8 {
        match self {
            Self::Radiance(_) | Self::Tracing(_) | Self::Top(_) => EXIT_FAILURE,
            Self::Mismatch(_) => EXIT_DATA_ERROR,
        }
    }

    /// Says what failed on stderr, and returns the exit code for it.
    pub(crate) fn report(&self) -> ExitCode {
        eprintln!("radctl: {self}");
        ExitCode::from(self.exit_status())
    }
}

/// A data error: the first byte where what a device gave back differs from
/// what the work should have made.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what}: the data read back differs at byte {offset}: expected {}, got {}", byte(*.expected), byte(*.got))]
pub(crate) struct Mismatch {
    /// The work whose data it is (`fill`, `copy`, ...).
    pub(crate) what: &'static str,
    /// From the start of the data.
    pub(crate) offset: usize,
    /// None where the expected data ends before what was read back.
    pub(crate) expected: Option<u8>,
    /// None where what was read back ends before the expected data.
    pub(crate) got: Option<u8>,
}

fn byte(b: Option<u8>) -> String {
    b.map_or_else(|| "nothing (the data ends there)".into(), |b| format!("{b:#04x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_error_has_its_own_exit_status_and_names_the_byte() {
        let e = Error::from(Mismatch { what: "fill", offset: 4097, expected: Some(0xbe), got: Some(0x41) });
        assert_eq!(e.exit_status(), EXIT_DATA_ERROR);
        assert_eq!(e.to_string(), "fill: the data read back differs at byte 4097: expected 0xbe, got 0x41");
        let short = Mismatch { what: "printf", offset: 12, expected: Some(b't'), got: None };
        assert_eq!(
            short.to_string(),
            "printf: the data read back differs at byte 12: expected 0x74, got nothing (the data ends there)"
        );
        let e = Error::from(radiance::Error::InvalidArgument("bad".into()));
        assert_eq!(e.exit_status(), EXIT_FAILURE);
    }
}
