//! baton's decision core.
//!
//! This crate is pure and deterministic: it contains no I/O, reads no clock, no environment and no random
//! source, and never spawns or awaits anything. Hosts pass time (`nowMs`, milliseconds since the Unix epoch,
//! read after waking), facts (environment variables, the CI event payload, git facts) and store contents
//! (cell snapshots) in as arguments; the core answers with decisions and with effects as data (the file
//! changes to commit, the envelope to print).
//!
//! The same code is compiled three ways: linked natively (tests, benchmarks), as a WebAssembly component
//! with no imports (`component/`, run by the `baton` CLI in wasmtime and by any sandboxed host), and as a
//! wasm-bindgen module (`host-node/`, the npm package). All of them go through [`api::invoke`].
//!
//! A mutating store operation is always: load the cell snapshot ([`cell::Cell`]), ask the core
//! ([`lock::acquire`], ...), commit the returned [`cell::Change`]s only if the cell is unchanged since the
//! load, and on a conflict load again and ask again.

pub mod api;
pub mod cell;
pub mod cell_steps;
pub mod claims;
pub mod command_line;
pub mod context;
pub mod envelope;
pub mod error;
pub mod gc;
pub mod gitclone;
pub mod gitstore;
pub mod gitstream;
pub mod lease;
pub mod lock;
pub mod mutex;
pub mod names;
pub mod ownership;
pub mod receipt;
pub mod run;
pub mod scope;
pub mod stores;
pub mod time;
pub mod typed;

pub use error::{CoreError, ErrorCode};
