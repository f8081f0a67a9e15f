//! Progress agents: work above the engine that must advance whenever the engine progresses, in
//! whatever call polls it (a non-blocking collective's schedule, for one), as UCX's progress
//! callbacks do. The engine owns them and runs them after each progress step that has any.

use crate::{Engine, EngineError};

/// Something progress advances.
pub trait ProgressAgent {
    /// Advances as far as it can without waiting; true if it did anything. It may start, test and
    /// take requests, but never waits nor calls [`Engine::progress`].
    fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError>;

    /// Whether it is done; a done agent is dropped.
    fn is_done(&self) -> bool;
}

impl Engine {
    /// Hands `agent` to the engine, which advances it after every progress step until it is done.
    pub fn attach_agent(&mut self, agent: Box<dyn ProgressAgent>) {
        if !agent.is_done() {
            self.agents.push(agent);
        }
    }

    /// Whether any agent is still running.
    pub fn has_agents(&self) -> bool {
        !self.agents.is_empty()
    }

    /// Advances every agent once; `moved` or'ed with whether any did something.
    #[inline(never)]
    pub(crate) fn advance_agents(&mut self, mut moved: bool) -> Result<bool, EngineError> {
        // Agents call back into the engine, so they are taken out while they run; any attached
        // meanwhile land in the emptied list and are kept.
        let mut running = std::mem::take(&mut self.agents);
        let mut outcome = Ok(());
        for agent in running.iter_mut() {
            match agent.advance(self) {
                Ok(advanced) => moved |= advanced,
                Err(failure) => {
                    outcome = Err(failure);
                    break;
                }
            }
        }
        running.retain(|agent| !agent.is_done());
        running.append(&mut self.agents);
        self.agents = running;
        outcome.map(|()| moved)
    }
}
