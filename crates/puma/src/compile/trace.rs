//! The shared-memory access trace the code generator records: every load, store, send
//! and receive instruction in the global order, per tile. `check.rs` proves reuse safe
//! on it and checks that it is what the generated code does.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// Words preloaded by the host before the run (inputs, constants).
    Init,
    /// `store` (core) or `receive` (unit): waits until the words are invalid.
    Write,
    /// `load` (core) or `send` (unit): waits until the words are valid.
    Read,
}

/// One shared-memory instruction. `agent` is the core index, `cores` for the tile's
/// send/receive unit, `u16::MAX` for the host (preloads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the global order of the operation that emitted it.
    pub pos: u32,
    pub agent: u16,
    pub kind: EventKind,
    pub addr: u32,
    /// `vec` chunks of `width` words (an init is one chunk).
    pub width: u32,
    pub vec: u32,
    /// Reader count set by a write or init.
    pub count: u32,
}

impl Event {
    /// Words the event covers (never empty: width and vec are at least 1).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u32 {
        self.width * self.vec
    }
}

/// The trace of a whole program: events per tile, in emission order.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub tiles: Vec<Vec<Event>>,
}
