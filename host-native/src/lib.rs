//! The `baton` CLI as a library: the wasmtime embedding of the core component, the stores, context
//! gathering and the commands. The binary (`main.rs`) only parses arguments and prints.
//!
//! Hosts are thin: every decision is made by the core component (`engine`); this crate supplies the
//! clock, the store I/O and the process plumbing.

pub mod cli;
pub mod clock;
pub mod commands;
pub mod context;
pub mod driver;
pub mod duration;
pub mod engine;
pub mod error;
pub mod output;
pub mod random;
pub mod store;
pub mod work;
mod worker;
