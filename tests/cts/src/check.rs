// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What cases return, and the checks they make.

use radiance::{Error, StatusCode};

/// Why a case did not pass.
#[derive(Debug)]
pub enum Stop {
    /// A check failed: what, where, and the values.
    Fail(String),
    /// The backend cannot do what the case needs; says why.
    Skip(String),
}

/// What a case returns. `?` on a library call turns an unexpected error into
/// a failure.
pub type Outcome = Result<(), Stop>;

impl From<Error> for Stop {
    /// Names the `?` that met the error.
    #[track_caller]
    fn from(e: Error) -> Self {
        let at = std::panic::Location::caller();
        Self::Fail(format!("{at}: unexpected error: {e} ({:?})", e.status()))
    }
}

/// A case's result as reported.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail(String),
    Skip(String),
}

impl From<Outcome> for Verdict {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Ok(()) => Self::Pass,
            Err(Stop::Fail(why)) => Self::Fail(why),
            Err(Stop::Skip(why)) => Self::Skip(why),
        }
    }
}

/// Fails the case with a message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::check::Stop::Fail(format!("{}:{}: {}", file!(), line!(), format!($($fmt)+))));
        }
    };
}
pub(crate) use ensure;

/// Fails the case unless the two values are equal, showing both.
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($fmt:tt)+) => {{
        let (left, right) = (&$left, &$right);
        $crate::check::ensure!(left == right, "{}: {:?} != {:?}", format!($($fmt)+), left, right);
    }};
}
pub(crate) use ensure_eq;

/// Fails unless `result` is an error with status `code`; returns the error.
#[track_caller]
pub(crate) fn expect_err<T>(result: radiance::Result<T>, code: StatusCode, what: &str) -> Result<Error, Stop> {
    let at = std::panic::Location::caller();
    match result {
        Err(e) if e.status() == code => Ok(e),
        Err(e) => Err(Stop::Fail(format!("{at}: {what}: expected {code:?}, got {:?}: {e}", e.status()))),
        Ok(_) => Err(Stop::Fail(format!("{at}: {what}: expected {code:?}, got Ok"))),
    }
}
