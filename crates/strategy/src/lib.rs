//! Strategies: I/O-free decisions about how a message travels (which transport, which protocol,
//! and for multirail, what split). They receive every fact they need, clocks included.
