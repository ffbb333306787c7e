//! The core's types to and from the component's (the text the component converts with), for the tests that
//! drive the typed interfaces with the core's own requests and answers.

#![allow(dead_code, unreachable_pub)] // each test uses the directions it needs

use baton_native::engine::wit::commands as wc;
use baton_native::engine::wit::leases as wl;
use baton_native::engine::wit::locks as w;
use baton_native::engine::wit::runs as wr;
use baton_native::engine::wit::stores as ws;
use baton_native::engine::wit::types as t;
include!("../../../component/src/wit_convert.rs");
include!("../../../component/src/wit_convert_stores.rs");
include!("../../../component/src/wit_convert_run.rs");
include!("../../../component/src/wit_convert_commands.rs");
