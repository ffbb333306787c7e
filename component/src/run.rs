//! The `runs` interface: the run machine as a typed resource. A host loads the cells the machine names and
//! commits the changes `apply` decides; it never names a core operation.

use crate::convert;
use crate::exports::baton::core::runs::{self as wr, GuestRun};
use crate::exports::baton::core::types::{Cell, Change, Error};
use baton_core::run::RunMachine;
use std::cell::RefCell;

/// The `run` resource: a core run machine behind a `RefCell` (resources are called through `&self`).
pub(crate) struct Run(RefCell<RunMachine>);

impl GuestRun for Run {
    fn create(config: wr::RunConfig) -> Result<wr::Run, Error> {
        RunMachine::new(convert::run_config(config))
            .map(|m| wr::Run::new(Self(RefCell::new(m))))
            .map_err(convert::error)
    }
    fn holder(&self) -> String {
        self.0.borrow().holder().to_owned()
    }
    fn env(&self) -> String {
        self.0.borrow().env().to_owned()
    }
    fn scope(&self) -> String {
        self.0.borrow().scope().to_owned()
    }
    fn start(&self, now_ms: u64) -> Result<(), Error> {
        self.0.borrow_mut().start(now_ms).map_err(convert::error)
    }
    fn work_ended(&self, end: wr::WorkEnd, now_ms: u64) -> Result<(), Error> {
        self.0.borrow_mut().work_ended(convert::work_end(end), now_ms).map_err(convert::error)
    }
    fn signal(&self, signal: wr::HostSignal, now_ms: u64) {
        self.0.borrow_mut().signal(convert::host_signal(signal), now_ms);
    }
    fn finish(&self, succeeded: bool, now_ms: u64) -> Result<(), Error> {
        self.0.borrow_mut().finish(succeeded, now_ms).map_err(convert::error)
    }
    fn release(&self, now_ms: u64) {
        self.0.borrow_mut().release(now_ms);
    }
    fn handle_timeout(&self, now_ms: u64) {
        self.0.borrow_mut().handle_timeout(now_ms);
    }
    fn apply(&self, id: u64, cell: Cell, now_ms: i64) -> Result<Vec<Change>, Error> {
        baton_core::api::run_apply(&mut self.0.borrow_mut(), id, &convert::cell(cell), now_ms)
            .map(|changes| changes.into_iter().map(convert::change).collect())
            .map_err(convert::error)
    }
    fn handle_store_outcome(&self, id: u64, outcome: Result<(), Error>, now_ms: u64) -> Result<(), Error> {
        let outcome = outcome.map_err(convert::error_back);
        self.0.borrow_mut().handle_store_outcome(id, outcome, now_ms).map_err(convert::error)
    }
    fn poll_action(&self) -> Option<wr::RunAction> {
        baton_core::typed::run_poll_action(&mut self.0.borrow_mut()).map(convert::run_action)
    }
    fn describe(&self, id: u64) -> Option<wr::Description> {
        let m = self.0.borrow();
        m.describe(id).map(|(op, request)| wr::Description { op: op.to_owned(), request: request.to_string() })
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.0.borrow().poll_timeout()
    }
    fn fencing_token(&self, now_ms: u64) -> Option<u64> {
        self.0.borrow().fencing_token(now_ms)
    }
    fn store_deadline(&self, now_ms: u64) -> u64 {
        self.0.borrow().store_deadline(now_ms)
    }
    fn is_finished(&self) -> bool {
        self.0.borrow().is_finished()
    }
}
