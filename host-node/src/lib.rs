//! wasm-bindgen bindings of the baton core for the npm package. Type conversions only: the JS layer
//! (`host-node/js/`) calls [`invoke`] with an operation name and a JSON request, exactly as the component's
//! WIT functions and the native runner do (see `baton_core::api`).

use wasm_bindgen::prelude::*;

/// Runs one core operation. On a refusal it throws an `Error` whose `code` is the stable error code and
/// whose `json` is the whole error object (`{"code","message","hint"?,...details}`) as JSON text.
#[wasm_bindgen]
pub fn invoke(op: &str, request: &str) -> Result<String, JsValue> {
    baton_core::api::invoke(op, request).map_err(|e| {
        let err = js_sys::Error::new(&e.message);
        // Setting properties on a fresh Error object cannot fail.
        let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code.as_str().into());
        let _ = js_sys::Reflect::set(&err, &"json".into(), &e.to_json().to_string().into());
        err.into()
    })
}
