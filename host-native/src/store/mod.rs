//! Stores: the only I/O primitive. A store loads cell snapshots and commits the changes the core decided,
//! atomically with respect to every other transaction on the same cell. Stores know nothing about leases.

pub mod dir;
pub mod mutex;

pub use dir::DirStore;
