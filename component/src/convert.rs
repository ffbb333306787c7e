//! Conversions between the core's types and the component's generated WIT types (`wit_convert.rs`, shared
//! and `wit_convert_stores.rs`, `wit_convert_commands.rs`, shared with the CLI; `wit_convert_ownership.rs`).
//! Nothing is decided here.

#![allow(dead_code)] // the shared text converts both ways; the component needs one way of some

use crate::exports::baton::core::commands as wc;
use crate::exports::baton::core::leases as wl;
use crate::exports::baton::core::locks as w;
use crate::exports::baton::core::ownership as wo;
use crate::exports::baton::core::runs as wr;
use crate::exports::baton::core::stores as ws;
use crate::exports::baton::core::types as t;

include!("wit_convert.rs");
include!("wit_convert_stores.rs");
include!("wit_convert_ownership.rs");
include!("wit_convert_run.rs");
include!("wit_convert_commands.rs");
