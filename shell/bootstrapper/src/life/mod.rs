//! The node's life: the one-way lock, the node state and its start-up table, the shared node and the steps after
//! the lock, and what happens after a reboot (rejoin, recovery, reset).

pub mod lifecycle;
pub mod lock;
pub(crate) mod node;
pub(crate) mod recover;
pub mod rejoin;
pub(crate) mod state;
