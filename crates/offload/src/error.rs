//! Errors of the offload engine. Each says what it is about and what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    #[error(transparent)]
    Loops(#[from] pimkit_loops::LoopsError),
    #[error("{0}")]
    Arch(pimkit_engine::ArchError),
    #[error("{path}: host calibration file: {msg}; delete it or run `pimkit calibrate --force`")]
    Calib { path: PathBuf, msg: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bad option value (core list, sweep, granularity).
    #[error("{0}")]
    Usage(String),
    #[error(
        "counter backend 'perf' is not available: {0}; use `--counters model` (or `auto`) on machines without a hardware PMU"
    )]
    Perf(String),
    #[error("reinsertion: {0}")]
    Reinsert(String),
}

impl OffloadError {
    /// True when the user can fix it (bad file, bad flag, backend not available).
    pub fn is_user(&self) -> bool {
        // A path the user gave that is a directory, missing, or not writable (the
        // calibration file, `--emit`); other I/O failures are not theirs to fix.
        if let OffloadError::Io { source, .. } = self {
            use std::io::ErrorKind as K;
            return matches!(
                source.kind(),
                K::NotFound
                    | K::PermissionDenied
                    | K::IsADirectory
                    | K::NotADirectory
                    | K::AlreadyExists
                    | K::InvalidInput
                    | K::InvalidFilename
                    | K::ReadOnlyFilesystem
            );
        }
        matches!(
            self,
            OffloadError::Arch(_)
                | OffloadError::Calib { .. }
                | OffloadError::Usage(_)
                | OffloadError::Perf(_)
        ) || matches!(
            self,
            OffloadError::Loops(
                pimkit_loops::LoopsError::Unsupported { .. }
                    | pimkit_loops::LoopsError::Node { .. }
                    | pimkit_loops::LoopsError::Input(_)
            )
        )
    }
}

pub type Result<T> = std::result::Result<T, OffloadError>;

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> OffloadError + '_ {
    move |source| OffloadError::Io {
        path: path.to_path_buf(),
        source,
    }
}
