//! The windows of this process: handles, what each window's MPI calls read (flavor, base, size,
//! name, info, error handler, predefined attribute values) and its shared state.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use braid_sys::shm::{SharedInPlace, SharedMapping};

use super::state::WinState;
use crate::comm::Hints;
use crate::consts::*;
use crate::error::{error, MpiError, MpiResult};
use crate::group::Members;

/// The values the predefined window attributes point to: boxed, so their addresses stay put.
pub struct AttributeValues {
    pub size: MPI_Aint,
    pub disp_unit: c_int,
    pub flavor: c_int,
    pub model: c_int,
}

/// One window.
pub struct Window {
    pub state: Rc<RefCell<WinState>>,
    /// The private duplicate of the creating communicator.
    pub comm: MPI_Comm,
    /// The creating communicator's members.
    pub members: Members,
    pub base: *mut c_void,
    pub attributes: Box<AttributeValues>,
    pub name: String,
    pub hints: Hints,
    pub errhandler: MPI_Errhandler,
    /// Memory MPI_Win_allocate took outside a shared segment (16-byte aligned).
    pub owned: Option<Vec<u128>>,
    /// A created window's memory shared in place, and the other ranks' mapped here.
    pub shared_created: Option<SharedCreated>,
}

/// A created window's memory on one node (see `abi::shared_create`): this rank's under its
/// shared-memory file, and the other ranks' mapped here. Dropped when the window is freed, after
/// its last access, which makes whole pages private again.
pub struct SharedCreated {
    pub own: Option<SharedInPlace>,
    pub peers: Vec<SharedMapping>,
}

/// Windows by handle (index + 1: handle 0 is MPI_WIN_NULL).
#[derive(Default)]
pub struct WinTable {
    slots: Vec<Option<Window>>,
}

impl WinTable {
    pub fn new() -> WinTable {
        WinTable::default()
    }

    pub fn insert(&mut self, window: Window) -> MPI_Win {
        let index = match self.slots.iter().position(Option::is_none) {
            Some(index) => {
                self.slots[index] = Some(window);
                index
            }
            None => {
                self.slots.push(Some(window));
                self.slots.len() - 1
            }
        };
        index as MPI_Win + 1
    }

    fn index(win: MPI_Win) -> Option<usize> {
        usize::try_from(win.checked_sub(1)?).ok()
    }

    pub fn get(&self, win: MPI_Win) -> MpiResult<&Window> {
        self.find(win).ok_or_else(|| invalid(win))
    }

    /// The window of `win`, if it names one (fast paths, which leave the error to the full path).
    #[inline]
    pub fn find(&self, win: MPI_Win) -> Option<&Window> {
        Self::index(win).and_then(|index| self.slots.get(index)?.as_ref())
    }

    pub fn get_mut(&mut self, win: MPI_Win) -> MpiResult<&mut Window> {
        Self::index(win).and_then(|index| self.slots.get_mut(index)?.as_mut()).ok_or_else(|| invalid(win))
    }

    pub fn remove(&mut self, win: MPI_Win) -> MpiResult<Window> {
        Self::index(win).and_then(|index| self.slots.get_mut(index)?.take()).ok_or_else(|| invalid(win))
    }

    /// The error handler of `win`, None for an invalid handle.
    pub fn errhandler(&self, win: MPI_Win) -> Option<MPI_Errhandler> {
        self.get(win).ok().map(|window| window.errhandler)
    }

    /// Whether a window has `errhandler` attached.
    pub fn uses_errhandler(&self, errhandler: MPI_Errhandler) -> bool {
        self.slots.iter().flatten().any(|window| window.errhandler == errhandler)
    }

    /// The value of predefined attribute `keyval` on `win`: MPI_WIN_BASE is the base address
    /// itself, the others point to their values.
    pub fn predefined_attribute(&self, win: MPI_Win, keyval: c_int) -> MpiResult<Option<*mut c_void>> {
        let window = self.get(win)?;
        let values = &*window.attributes;
        Ok(match keyval {
            MPI_WIN_BASE => Some(window.base),
            MPI_WIN_SIZE => Some((&values.size as *const MPI_Aint).cast_mut().cast()),
            MPI_WIN_DISP_UNIT => Some((&values.disp_unit as *const c_int).cast_mut().cast()),
            MPI_WIN_CREATE_FLAVOR => Some((&values.flavor as *const c_int).cast_mut().cast()),
            MPI_WIN_MODEL => Some((&values.model as *const c_int).cast_mut().cast()),
            _ => None,
        })
    }
}

/// The error of a handle that names no window.
#[cold]
pub fn invalid(win: MPI_Win) -> MpiError {
    let detail = if win == MPI_WIN_NULL { "MPI_WIN_NULL is not a window".to_string() } else { format!("{win} is not a window") };
    error(MPI_COMM_WORLD, MPI_ERR_WIN, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_start_at_one_and_invalid_ones_are_err_win() {
        let table = WinTable::new();
        assert_eq!(table.get(MPI_WIN_NULL).err().unwrap().class, MPI_ERR_WIN);
        assert!(table.get(-3).is_err());
        assert!(table.get(7).err().unwrap().detail.contains("not a window"));
        assert!(table.errhandler(1).is_none());
        assert!(!table.uses_errhandler(MPI_ERRORS_RETURN));
    }
}
