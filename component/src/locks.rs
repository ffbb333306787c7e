//! The `locks` and `leases` interfaces: typed lock transactions and the typed lease resource.

use crate::convert;
use crate::exports::baton::core::leases::{self as wl, GuestLease};
use crate::exports::baton::core::locks::{self as w};
use crate::exports::baton::core::types::{Cell, Error};
use baton_core::lease::LeaseMachine;
use baton_core::typed;
use std::cell::RefCell;

pub(crate) fn apply(cell: Cell, now_ms: i64, op: w::LockOp) -> Result<w::LockAnswer, Error> {
    typed::apply_lock_op(&convert::cell(cell), now_ms, &convert::lock_op(op))
        .map(convert::lock_answer)
        .map_err(convert::error)
}

/// The `lease` resource: a core lease machine behind a `RefCell` (resources are called through `&self`).
pub(crate) struct Lease(RefCell<LeaseMachine>);

impl GuestLease for Lease {
    fn create(config: wl::LeaseConfig) -> Result<wl::Lease, Error> {
        LeaseMachine::new(convert::lease_config(config))
            .map(|m| wl::Lease::new(Self(RefCell::new(m))))
            .map_err(convert::error)
    }
    fn acquire(&self, now_ms: u64) -> Result<(), Error> {
        self.0.borrow_mut().acquire(now_ms).map_err(convert::error)
    }
    fn release(&self, now_ms: u64) {
        self.0.borrow_mut().release(now_ms);
    }
    fn handle_timeout(&self, now_ms: u64) {
        self.0.borrow_mut().handle_timeout(now_ms);
    }
    fn handle_store_result(&self, id: u64, outcome: Result<w::LockAnswer, Error>, now_ms: u64) -> Result<(), Error> {
        let outcome = outcome.map(convert::lock_answer_back).map_err(convert::error_back);
        typed::lease_store_result(&mut self.0.borrow_mut(), id, outcome, now_ms).map_err(convert::error)
    }
    fn poll_action(&self) -> Option<wl::LeaseAction> {
        typed::lease_poll_action(&mut self.0.borrow_mut()).map(convert::lease_action)
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.0.borrow().poll_timeout()
    }
    fn fencing_token(&self, now_ms: u64) -> Option<u64> {
        self.0.borrow().fencing_token(now_ms)
    }
    fn is_finished(&self) -> bool {
        self.0.borrow().is_finished()
    }
    fn store_deadline(&self, now_ms: u64) -> u64 {
        self.0.borrow().store_deadline(now_ms)
    }
}
