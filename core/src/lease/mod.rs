//! The holder's side of a lease: a sans-I/O state machine (quinn-proto style).
//!
//! Method classes:
//! - commands: [`LeaseMachine::acquire`], [`LeaseMachine::release`];
//! - inputs: [`LeaseMachine::handle_timeout`], [`LeaseMachine::handle_store_result`];
//! - outputs: [`LeaseMachine::poll_action`] (store requests and events), [`LeaseMachine::poll_timeout`];
//! - getters: [`LeaseMachine::fencing_token`], [`LeaseMachine::is_finished`].
//!
//! `now` is the host's **monotonic** clock in milliseconds, read after waking. The wall clock never enters
//! the machine: the host reads it inside each store transaction, where the core's lock transactions use it.
//!
//! The host loop: wait for the earliest of `poll_timeout()`, a store completion, or a user command; read the
//! clock; make one call (`handle_timeout`, `handle_store_result`, `acquire`, `release`); then drain
//! `poll_action()` until it returns `None` and read `poll_timeout()` again. A store request is performed as
//! one cell transaction: load the cell, call the core operation `op` with `request` plus `cell` and `nowMs`,
//! commit the changes, and report `{"ok": answer}` or `{"error": {code, message, ...}}` with the request's id.
//!
//! Guarantees:
//! - at most one store request is in flight at any time, so renewals never queue however slow the store is;
//!   the next renewal is scheduled `renew_every` after the previous one **settled**;
//! - the holder's deadline is `sent_at + ttl - margin`, where `sent_at` is when the last successful acquire
//!   or renewal was sent; at the deadline the machine emits `must-stop` (once), and
//!   [`LeaseMachine::fencing_token`] returns `None` from then on;
//! - a renewal that the store refuses with `LOCK_LOST` emits `lost`; other renewal errors are reported
//!   (`renew-failed`) and retried at the next tick;
//! - a release is retried after 200, 400 and 800 ms, then reported with a warning saying until when the lock
//!   stays held; a release never overlaps a renewal.
//!
//! Two consequences hosts should know: a `release` requested while the acquire is in flight still sees the
//! `acquired` event first (then the release goes out); and after `must-stop` the machine keeps renewing until
//! the host releases, so the lock does not lapse while the work shuts down, but `fencing_token` stays `None`.

mod config;
mod machine;

pub use config::{
    DEFAULT_BUDGET_MS, DEFAULT_POLL_MS, DEFAULT_TTL_MS, DEFAULT_WAIT_TIMEOUT_MS, LeaseConfig, RELEASE_RETRY_MS, Timing,
};
pub use machine::{Action, LeaseEvent, LeaseMachine, Mono, StoreResult};

#[cfg(test)]
mod tests;
