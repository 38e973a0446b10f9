//! Files written so that a crash or a second process never leaves half of one.
//!
//! [`write_atomic`] writes a temporary file in the target's directory, flushes it to disk,
//! sets its mode, renames it over the target and flushes the directory: a reader sees the old
//! contents or the new ones, never a mix. [`FileLock`] is an exclusive advisory lock on a
//! sidecar file, for read-modify-write cycles shared between processes. Unix (Linux, macOS)
//! is what this is written for; elsewhere the mode is not applied.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Mode for files that may hold secrets: tokens, client secrets, header values.
pub(crate) const PRIVATE_MODE: u32 = 0o600;

/// Makes each temporary name unique within this process; the pid makes it unique between
/// processes.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` atomically, with permissions `mode` (applied even when the
/// file existed with wider rights). Creates the parent directory (mode 0700) when missing.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = parent_dir(path);
    create_private_dir(&dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_then_rename(&tmp, path, bytes, mode);
    if result.is_err() {
        // The temporary file is ours and useless now; failing to remove it changes nothing.
        let _ = fs::remove_file(&tmp);
    }
    result?;
    // The rename is durable only once the directory entry is on disk.
    File::open(&dir)?.sync_all()
}

fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = create_new(tmp, mode)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    set_mode(tmp, mode)?;
    drop(file);
    fs::rename(tmp, path)
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Creates `path`, failing if it exists, with permissions `mode` (less the umask).
fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    with_mode(&mut options, mode);
    options.open(path)
}

/// Sets the mode new files are created with; permission bits are a Unix notion.
fn with_mode(options: &mut OpenOptions, mode: u32) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, mode);
    #[cfg(not(unix))]
    let _ = (options, mode);
}

/// Sets the permission bits exactly (the umask applies at creation, not here).
#[cfg(unix)]
pub(crate) fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Permission bits are a Unix notion; elsewhere nothing is changed.
#[cfg(not(unix))]
pub(crate) fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// The permission bits of an existing file, if it exists.
#[cfg(unix)]
pub(crate) fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

/// Permission bits are a Unix notion; elsewhere there are none.
#[cfg(not(unix))]
pub(crate) fn mode_of(_path: &Path) -> Option<u32> {
    None
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

/// An exclusive lock on `<path>.lock`, held until dropped. The sidecar is never deleted:
/// deleting a lock file lets two processes lock two different files.
#[derive(Debug)]
pub(crate) struct FileLock {
    file: File,
}

impl FileLock {
    /// Blocks until this process holds the lock for `path`.
    pub(crate) fn acquire(path: &Path) -> io::Result<Self> {
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = PathBuf::from(name);
        create_private_dir(&parent_dir(&lock_path))?;
        let file = open_lock_file(&lock_path)?;
        file.lock()?;
        Ok(Self { file })
    }
}

impl FileLock {
    /// Blocks until this process holds the lock for the files of directory `dir` (created
    /// private when missing), leaving nothing behind in it: the directory itself is locked
    /// where the system allows (Unix), so a project's `.mcp-host/` never keeps a `.lock`
    /// file that would show up in the project's tree. Elsewhere a `.lock` sidecar next to the
    /// directory is used, as [`FileLock::acquire`] does.
    pub(crate) fn acquire_dir(dir: &Path) -> io::Result<Self> {
        create_private_dir(dir)?;
        #[cfg(unix)]
        {
            let file = File::open(dir)?;
            file.lock()?;
            Ok(Self { file })
        }
        #[cfg(not(unix))]
        {
            Self::acquire(dir)
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first only makes it prompt.
        let _ = self.file.unlock();
    }
}

/// Opens the lock file, creating it if missing, and never through a symbolic link: a link
/// planted at the lock's name would make us create (or lock) a file of someone else's
/// choosing. Creation is exclusive (`O_EXCL` never follows a link); an existing name must be
/// the very file that was opened.
fn open_lock_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    with_mode(&mut options, PRIVATE_MODE);
    match options.open(path) {
        Ok(file) => return Ok(file),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(refused_link(path));
    }
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    if !names_itself(path, &file)? {
        return Err(refused_link(path));
    }
    Ok(file)
}

fn refused_link(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link or was replaced while being opened; remove it",
            path.display()
        ),
    )
}

/// Whether `path` names `file` itself (not through a symbolic link) and it is a regular file.
#[cfg(unix)]
fn names_itself(path: &Path, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let (named, opened) = (fs::symlink_metadata(path)?, file.metadata()?);
    Ok(named.file_type().is_file() && named.dev() == opened.dev() && named.ino() == opened.ino())
}

/// Elsewhere only the kind of what the path names is checked.
#[cfg(not(unix))]
fn names_itself(path: &Path, _file: &File) -> io::Result<bool> {
    Ok(fs::symlink_metadata(path)?.file_type().is_file())
}

/// The contents of a file that may hold secrets, `None` if it does not exist. A regular file
/// found readable by others is narrowed to [`PRIVATE_MODE`], through the open file and only
/// when the path names it itself: the target of a symbolic link (which may be anyone's file,
/// and shared on purpose) is read but never has its mode changed. Failing to narrow (a file
/// owned by someone else) is not a reason to refuse reading it.
#[cfg(feature = "oauth")]
pub(crate) fn read_private(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    narrow(path, &file);
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

#[cfg(all(unix, feature = "oauth"))]
fn narrow(path: &Path, file: &File) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = file.metadata() else { return };
    if meta.permissions().mode() & 0o077 != 0 && names_itself(path, file).unwrap_or(false) {
        let _ = file.set_permissions(fs::Permissions::from_mode(PRIVATE_MODE));
    }
}

#[cfg(all(not(unix), feature = "oauth"))]
fn narrow(_path: &Path, _file: &File) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mcp-host-fs-{tag}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn replaces_whole_files_with_the_mode_asked_and_leaves_no_temporary() {
        let dir = temp_dir("atomic");
        let path = dir.join("sub").join("f.json");
        write_atomic(&path, b"one", 0o644).unwrap();
        fs::write(&path, b"old").unwrap();
        set_mode(&path, 0o666).unwrap();
        write_atomic(&path, b"two", PRIVATE_MODE).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        #[cfg(unix)]
        assert_eq!(mode_of(&path), Some(0o600), "narrowed though it was 0666");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")]);
        fs::remove_dir_all(dir).unwrap();
    }
}
