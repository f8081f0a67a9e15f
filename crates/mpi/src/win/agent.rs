//! A window's progress agent: every engine progress step, in whatever MPI call, it reaps this
//! rank's answers and serves the requests other ranks sent this window (the `Messages` path).

use std::cell::RefCell;
use std::rc::Rc;

use braid_engine::{Engine, EngineError, ProgressAgent};

use super::state::WinState;

pub struct WinAgent {
    pub state: Rc<RefCell<WinState>>,
}

impl ProgressAgent for WinAgent {
    fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        // A window call holding the state never makes progress meanwhile, so the borrow is free;
        // if it were not, this step would simply skip the window.
        match self.state.try_borrow_mut() {
            Ok(mut state) => state.advance(engine),
            Err(_) => Ok(false),
        }
    }

    fn is_done(&self) -> bool {
        self.state.try_borrow().is_ok_and(|state| state.freed)
    }
}
