//! CHARACTER arguments: Fortran passes the address of the characters and, after all the other
//! arguments, the length as a `usize`; the text is blank-padded and has no terminating NUL.

use std::ffi::{c_char, CString};

use crate::consts::MPI_MAX_LIBRARY_VERSION_STRING;

/// The C string of a Fortran CHARACTER input: trailing blanks dropped (MPI 3.1 §17.1.10), cut at
/// a NUL if the text has one.
///
/// # Safety
/// `text` points to `len` readable bytes (or `len` is 0).
pub unsafe fn string_in(text: *const c_char, len: usize) -> CString {
    let bytes: &[u8] = if len == 0 || text.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) }
    };
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |last| last + 1);
    CString::new(&bytes[..end]).expect("cut at the first NUL")
}

/// Room for a C function's string result, copied to the Fortran CHARACTER afterwards.
pub struct StringOut(Vec<u8>);

impl StringOut {
    /// Room for the longest string MPI returns, or for the Fortran variable's length if longer
    /// (MPI_Info_get writes up to the length the program gives).
    pub fn new(len: usize) -> StringOut {
        StringOut(vec![0; len.max(MPI_MAX_LIBRARY_VERSION_STRING as usize) + 1])
    }

    pub fn as_mut_ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr().cast()
    }

    /// Copies the C string into the `len` characters at `dest`, cut to fit and blank-padded.
    ///
    /// # Safety
    /// `dest` points to `len` writable bytes (or `len` is 0).
    pub unsafe fn copy_to(&self, dest: *mut c_char, len: usize) {
        if len == 0 || dest.is_null() {
            return;
        }
        let text = self.0.split(|&b| b == 0).next().unwrap_or(&[]);
        let copied = text.len().min(len);
        // SAFETY: the caller's contract; `copied <= len`.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), dest.cast::<u8>(), copied);
            std::ptr::write_bytes(dest.cast::<u8>().add(copied), b' ', len - copied);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_text_loses_its_trailing_blanks() {
        let text = b"key   ";
        // SAFETY: 6 readable bytes.
        assert_eq!(unsafe { string_in(text.as_ptr().cast(), 6) }.as_bytes(), b"key");
        // SAFETY: 6 readable bytes.
        assert_eq!(unsafe { string_in(text.as_ptr().cast(), 0) }.as_bytes(), b"");
        let with_nul = b"a b\0zz";
        // SAFETY: 6 readable bytes.
        assert_eq!(unsafe { string_in(with_nul.as_ptr().cast(), 6) }.as_bytes(), b"a b");
    }

    #[test]
    fn results_are_blank_padded_or_cut() {
        let mut out = StringOut::new(4);
        // SAFETY: the room holds more than 4 bytes.
        unsafe { std::ptr::copy_nonoverlapping(c"ab".as_ptr(), out.as_mut_ptr(), 3) };
        let mut dest = [b'x'; 5];
        // SAFETY: 5 writable bytes.
        unsafe { out.copy_to(dest.as_mut_ptr().cast(), 5) };
        assert_eq!(&dest, b"ab   ");
        let mut short = [b'x'; 1];
        // SAFETY: 1 writable byte.
        unsafe { out.copy_to(short.as_mut_ptr().cast(), 1) };
        assert_eq!(&short, b"a");
    }
}
