//! A request given as a plain JS object, read as the JSON value `JSON.stringify` would have written.
//!
//! serde-wasm-bindgen reads a key whose value is `undefined` as `null` when the target is an untyped
//! `serde_json::Value`, but the core's requests tell an absent key from `null` (`overrides.pr` absent:
//! detect it; `null`: no pull request), and the JS layer passes `{pr: opts.pr}` meaning absent. So this
//! walk keeps `JSON.stringify`'s rules: keys set to `undefined` or a function are left out, `undefined` in
//! an array is `null`, non-finite numbers are `null`, and an object with `toJSON` (a `Date`) is read as
//! what `toJSON()` returns.

use js_sys::{Array, Function, Number, Object, Reflect};
use serde_json::{Map, Value};
use wasm_bindgen::{JsCast, JsValue};

/// Nesting deeper than this is refused (`JSON.stringify` of a cyclic object throws; this stops the walk).
const MAX_DEPTH: usize = 512;

/// `value` as JSON; `Err` says what could not be read (a BigInt, a symbol, a cycle).
pub(crate) fn json_of(value: &JsValue) -> Result<Value, String> {
    read(value, 0)
}

fn read(value: &JsValue, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("the request nests deeper than {MAX_DEPTH} levels (a cycle?)"));
    }
    if value.is_null() || value.is_undefined() {
        return Ok(Value::Null);
    }
    if let Some(b) = value.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(n) = value.as_f64() {
        return Ok(number(value, n));
    }
    if let Some(s) = value.as_string() {
        return Ok(Value::String(s));
    }
    if value.is_bigint() || value.is_symbol() {
        return Err("a BigInt or a symbol has no JSON form; pass numbers and strings".to_owned());
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        return array.iter().map(|item| read(&item, depth + 1)).collect::<Result<Vec<_>, _>>().map(Value::Array);
    }
    if let Some(to_json) = Reflect::get(value, &"toJSON".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
        let replaced = to_json.call0(value).map_err(|_| "a toJSON method threw".to_owned())?;
        return read(&replaced, depth + 1);
    }
    let mut map = Map::new();
    for entry in Object::entries(value.unchecked_ref()).iter() {
        let pair: &Array = entry.unchecked_ref();
        let item = pair.get(1);
        if item.is_undefined() || item.is_function() {
            continue;
        }
        map.insert(pair.get(0).as_string().unwrap_or_default(), read(&item, depth + 1)?);
    }
    Ok(Value::Object(map))
}

/// A JS number as JSON: safe integers as integers (what `serde_json` reads from `JSON.stringify`'s
/// text), other finite numbers as floats, `NaN` and infinities as `null`.
fn number(value: &JsValue, n: f64) -> Value {
    if Number::is_safe_integer(value) {
        // A safe integer converts exactly.
        if n >= 0.0 { Value::from(n as u64) } else { Value::from(n as i64) }
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}
