//! Scratch directories for the tests that run the `zs` binary or write files.

use std::path::{Path, PathBuf};

/// A fresh, empty directory for one test (`zs-<kind>-<pid>-<name>` in the system's temporary
/// directory), removed when the test passes and kept, to be read, when it fails.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(kind: &str, name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("zs-{kind}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a temporary directory");
        TempDir(d)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
