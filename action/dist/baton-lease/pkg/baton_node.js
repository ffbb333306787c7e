/* @ts-self-types="./baton_node.d.ts" */

/**
 * The holder's side of one lease (`baton_core::lease`). Times are the host's monotonic clock in whole
 * milliseconds (`Math.floor(performance.now())`); actions are JSON text.
 */
class Lease {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        LeaseFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_lease_free(ptr, 0);
    }
    /**
     * Starts acquiring (once).
     * @param {number} now
     */
    acquire(now) {
        const ret = wasm.lease_acquire(this.__wbg_ptr, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The epoch to fence writes with while the lease is safely held at `now`, or `undefined`.
     * @param {number} now
     * @returns {number | undefined}
     */
    fencingToken(now) {
        const ret = wasm.lease_fencingToken(this.__wbg_ptr, now);
        if (ret[3]) {
            throw takeFromExternrefTable0(ret[2]);
        }
        return ret[0] === 0 ? undefined : ret[1];
    }
    /**
     * Reports the outcome of store request `id` (`{"ok":...}` or `{"error":...}` as JSON text).
     * @param {number} id
     * @param {string} result
     * @param {number} now
     */
    handleStoreResult(id, result, now) {
        const val2 = +id;
        const val3 = +now;
        const ptr0 = passStringToWasm0(result, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.lease_handleStoreResult(this.__wbg_ptr, val2, ptr0, len0, val3);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Wakes the machine.
     * @param {number} now
     */
    handleTimeout(now) {
        const ret = wasm.lease_handleTimeout(this.__wbg_ptr, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Whether the lease is over.
     * @returns {boolean}
     */
    isFinished() {
        const ret = wasm.lease_isFinished(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Creates a lease machine from its JSON configuration; throws USAGE for inconsistent timing.
     * @param {string} config
     */
    constructor(config) {
        const ptr0 = passStringToWasm0(config, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.lease_new(ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        LeaseFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The next action as JSON text, or `undefined`.
     * @returns {string | undefined}
     */
    pollAction() {
        const ret = wasm.lease_pollAction(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * When to call `handleTimeout` next, or `undefined`.
     * @returns {number | undefined}
     */
    pollTimeout() {
        const ret = wasm.lease_pollTimeout(this.__wbg_ptr);
        return ret[0] === 0 ? undefined : ret[1];
    }
    /**
     * Ends the lease.
     * @param {number} now
     */
    release(now) {
        const ret = wasm.lease_release(this.__wbg_ptr, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The latest instant a store operation started at `now` may run until (the store budget, bounded by
     * the lease while held or released).
     * @param {number} now
     * @returns {number}
     */
    storeDeadline(now) {
        const ret = wasm.lease_storeDeadline(this.__wbg_ptr, now);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0];
    }
}
if (Symbol.dispose) Lease.prototype[Symbol.dispose] = Lease.prototype.free;
exports.Lease = Lease;

/**
 * One run from approval to verdict (`baton_core::run`). Times are the host's monotonic clock in whole
 * milliseconds; the configuration, results, work ends and actions are JSON text.
 */
class Run {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        RunFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_run_free(ptr, 0);
    }
    /**
     * The environment of the run's own cell.
     * @returns {string}
     */
    get env() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.run_env(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * The epoch to fence writes with while the lease is safely held at `now`, or `undefined`.
     * @param {number} now
     * @returns {number | undefined}
     */
    fencingToken(now) {
        const ret = wasm.run_fencingToken(this.__wbg_ptr, now);
        if (ret[3]) {
            throw takeFromExternrefTable0(ret[2]);
        }
        return ret[0] === 0 ? undefined : ret[1];
    }
    /**
     * Manual mode: the final receipt and the handover, keeping the lease.
     * @param {boolean} succeeded
     * @param {number} now
     */
    finish(succeeded, now) {
        const ret = wasm.run_finish(this.__wbg_ptr, succeeded, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Reports the outcome of store or read request `id`.
     * @param {number} id
     * @param {string} result
     * @param {number} now
     */
    handleStoreResult(id, result, now) {
        const val2 = +id;
        const val3 = +now;
        const ptr0 = passStringToWasm0(result, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.run_handleStoreResult(this.__wbg_ptr, val2, ptr0, len0, val3);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Wakes the machine.
     * @param {number} now
     */
    handleTimeout(now) {
        const ret = wasm.run_handleTimeout(this.__wbg_ptr, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The holder name of the run's lock.
     * @returns {string}
     */
    get holder() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.run_holder(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * Whether the run is over.
     * @returns {boolean}
     */
    isFinished() {
        const ret = wasm.run_isFinished(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Creates a run machine from its JSON configuration; throws ENV_NOT_APPROVED, USAGE or INTERNAL.
     * @param {string} config
     */
    constructor(config) {
        const ptr0 = passStringToWasm0(config, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.run_new(ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        RunFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The next action as JSON text, or `undefined`.
     * @returns {string | undefined}
     */
    pollAction() {
        const ret = wasm.run_pollAction(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * When to call `handleTimeout` next, or `undefined`.
     * @returns {number | undefined}
     */
    pollTimeout() {
        const ret = wasm.run_pollTimeout(this.__wbg_ptr);
        return ret[0] === 0 ? undefined : ret[1];
    }
    /**
     * Ends the run early or after `finish`.
     * @param {number} now
     */
    release(now) {
        const ret = wasm.run_release(this.__wbg_ptr, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The scope of the run's own cell.
     * @returns {string}
     */
    get scope() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.run_scope(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * A cancel signal reached the process: `interrupt` or `terminate`.
     * @param {string} signal
     * @param {number} now
     */
    signal(signal, now) {
        const val2 = +now;
        const ptr0 = passStringToWasm0(signal, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.run_signal(this.__wbg_ptr, ptr0, len0, val2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Starts the run (once).
     * @param {number} now
     */
    start(now) {
        const ret = wasm.run_start(this.__wbg_ptr, now);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The latest instant a store operation started at `now` may run until (a fenced write of the work).
     * @param {number} now
     * @returns {number}
     */
    storeDeadline(now) {
        const ret = wasm.run_storeDeadline(this.__wbg_ptr, now);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0];
    }
    /**
     * The work ended (`{"kind":"exited","code":0}`, ... as JSON text).
     * @param {string} end
     * @param {number} now
     */
    workEnded(end, now) {
        const val2 = +now;
        const ptr0 = passStringToWasm0(end, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.run_workEnded(this.__wbg_ptr, ptr0, len0, val2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
}
if (Symbol.dispose) Run.prototype[Symbol.dispose] = Run.prototype.free;
exports.Run = Run;

/**
 * Runs one core operation. On a refusal it throws an `Error` whose `code` is the stable error code and
 * whose `json` is the whole error object (`{"code","message","hint"?,...details}`) as JSON text.
 * @param {string} op
 * @param {string} request
 * @returns {string}
 */
function invoke(op, request) {
    let deferred4_0;
    let deferred4_1;
    try {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(op, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(request, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.invoke(ptr0, len0, ptr1, len1);
        var ptr3 = ret[0];
        var len3 = ret[1];
        if (ret[3]) {
            ptr3 = 0; len3 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred4_0 = ptr3;
        deferred4_1 = len3;
        return getStringFromWasm0(ptr3, len3);
    } finally {
        wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
    }
}
exports.invoke = invoke;
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbg_new_787b9fb330d55d78: function(arg0, arg1) {
            const ret = new Error(getStringFromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_set_2793479888329cb6: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = Reflect.set(arg0, arg1, arg2);
            return ret;
        }, arguments); },
        __wbindgen_generic_0000000000000001: function(arg0, arg1) {
            // Cast intrinsic for `Ref(String) -> Externref`.
            const ret = getStringFromWasm0(arg0, arg1);
            return ret;
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./baton_node_bg.js": import0,
    };
}

const LeaseFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_lease_free(ptr, 1));
const RunFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_run_free(ptr, 1));

function addToExternrefTable0(obj) {
    const idx = wasm.__externref_table_alloc();
    wasm.__wbindgen_externrefs.set(idx, obj);
    return idx;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function handleError(f, args) {
    try {
        return f.apply(this, args);
    } catch (e) {
        const idx = addToExternrefTable0(e);
        wasm.__wbindgen_exn_store(idx);
    }
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
function decodeText(bytes) {
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

const wasmPath = `${__dirname}/baton_node_bg.wasm`;
const wasmBytes = require('fs').readFileSync(wasmPath);
const wasmModule = new WebAssembly.Module(wasmBytes);
let wasmInstance = new WebAssembly.Instance(wasmModule, __wbg_get_imports());
let wasm = wasmInstance.exports;
wasm.__wbindgen_start();
