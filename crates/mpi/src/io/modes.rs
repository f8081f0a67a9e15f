//! The access mode of an open (MPI 3.1 §13.2.1) and the MPI error class of a failed system call
//! on a file (§13.7).

use std::ffi::c_int;

use crate::consts::*;

/// Every mode bit MPI defines.
const ALL: c_int = MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN | MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;

/// Why `amode` is not one MPI_File_open accepts, if it is not.
pub(crate) fn check_amode(amode: c_int) -> Result<(), String> {
    if amode & !ALL != 0 {
        return Err(format!("amode {amode} has bits that are no MPI_MODE_* constant"));
    }
    let access = [MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY].iter().filter(|&&mode| amode & mode != 0).count();
    if access != 1 {
        return Err(format!("amode {amode} must have exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR and MPI_MODE_WRONLY"));
    }
    if amode & MPI_MODE_RDONLY != 0 && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        return Err("MPI_MODE_RDONLY cannot go with MPI_MODE_CREATE or MPI_MODE_EXCL".into());
    }
    if amode & MPI_MODE_RDWR != 0 && amode & MPI_MODE_SEQUENTIAL != 0 {
        return Err("MPI_MODE_RDWR cannot go with MPI_MODE_SEQUENTIAL".into());
    }
    Ok(())
}

pub(crate) fn can_read(amode: c_int) -> bool {
    amode & MPI_MODE_WRONLY == 0
}

pub(crate) fn can_write(amode: c_int) -> bool {
    amode & MPI_MODE_RDONLY == 0
}

/// The MPI error class of a failed file system call.
pub(crate) fn class_of(error: &std::io::Error) -> c_int {
    match error.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => MPI_ERR_NO_SUCH_FILE,
        Some(libc::EEXIST) => MPI_ERR_FILE_EXISTS,
        Some(libc::EACCES) | Some(libc::EPERM) => MPI_ERR_ACCESS,
        Some(libc::EROFS) => MPI_ERR_READ_ONLY,
        Some(libc::ENOSPC) => MPI_ERR_NO_SPACE,
        Some(libc::EDQUOT) => MPI_ERR_QUOTA,
        Some(libc::EISDIR) | Some(libc::ENAMETOOLONG) | Some(libc::ELOOP) | Some(libc::EINVAL) => MPI_ERR_BAD_FILE,
        Some(libc::ETXTBSY) | Some(libc::EBUSY) => MPI_ERR_FILE_IN_USE,
        _ => MPI_ERR_IO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standards_amode_rules_hold() {
        for good in
            [MPI_MODE_RDONLY, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE]
        {
            assert!(check_amode(good).is_ok(), "{good}");
        }
        for bad in [0, MPI_MODE_RDONLY | MPI_MODE_WRONLY, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_MODE_RDONLY | MPI_MODE_EXCL, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_MODE_RDWR | 1 << 20] {
            assert!(check_amode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn system_errors_become_the_standards_classes() {
        let class = |errno| class_of(&std::io::Error::from_raw_os_error(errno));
        assert_eq!(class(libc::ENOENT), MPI_ERR_NO_SUCH_FILE);
        assert_eq!(class(libc::EEXIST), MPI_ERR_FILE_EXISTS);
        assert_eq!(class(libc::EACCES), MPI_ERR_ACCESS);
        assert_eq!(class(libc::ENOSPC), MPI_ERR_NO_SPACE);
        assert_eq!(class(libc::EIO), MPI_ERR_IO);
    }
}
