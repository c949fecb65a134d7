//! A message between tiles: its payload, where it goes and when (the event loop in
//! `exec` sends and receives them; `pool` recycles their buffers between runs).

pub(super) struct Packet {
    pub(super) dst: u32,
    pub(super) fifo: u32,
    pub(super) data: Vec<i32>,
    /// The earliest cycle it can reach `dst` (read from shared memory plus the network
    /// latency), and the cycle it entered `dst`'s receive FIFO.
    pub(super) ready: u64,
    pub(super) arrival: u64,
}
