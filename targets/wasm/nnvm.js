// nnvm.js: run a model built with target="wasm" in node or a browser. An ES module with no
// dependencies: loadModel(wasm, params) -> a Model that takes inputs as typed arrays.
//
//   import { loadModel } from "./nnvm.js";
//   const model = await loadModel(await fetch("model.wasm"), await (await fetch("model.params")).arrayBuffer());
//   const [y] = model.run({ data: new Float32Array(3 * 224 * 224) });
//
// The params file is the format of docs/params-format.md (nnvm.compiler.save_param_dict); every
// check the C runtime makes on it is made here, and bad input throws an NNVMError.

/** What nnvm.js throws for bad input or a failed run. */
export class NNVMError extends Error {
  constructor(message) {
    super(message);
    this.name = "NNVMError";
  }
}

/** dtype code (the params format's) -> [name, element bytes, typed array constructor]. */
const DTYPES = [
  ["float32", 4, Float32Array],
  ["float16", 2, Uint16Array], // raw IEEE half bits: JavaScript has no Float16Array yet
  ["float64", 8, Float64Array],
  ["int64", 8, BigInt64Array],
  ["int32", 4, Int32Array],
  ["int16", 2, Int16Array],
  ["int8", 1, Int8Array],
  ["uint8", 1, Uint8Array],
  ["bool", 1, Uint8Array],
  ["uint16", 2, Uint16Array],
  ["uint32", 4, Uint32Array],
  ["uint64", 8, BigUint64Array],
];

const MAGIC = "NNVMPRM\0";
const HASH_BYTES = 32;
const ALIGN = 64;
const INPUTS = 0;
const OUTPUTS = 1;
const PARAMS = 2;

/** A module of one function returning i32x4.splat(0): valid where the engine has SIMD. */
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 8, 1, 6, 0, 65, 0, 253, 17, 11,
]);

let crcTables = null;

/** CRC-32 (IEEE, as zlib.crc32), four bytes a step (slicing-by-4: 1.5x the bytewise loop). */
function crc32(bytes) {
  if (crcTables === null) {
    crcTables = [0, 1, 2, 3].map(() => new Uint32Array(256));
    const [t0, t1, t2, t3] = crcTables;
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      t0[i] = c >>> 0;
    }
    for (let i = 0; i < 256; i++) {
      t1[i] = (t0[i] >>> 8) ^ t0[t0[i] & 0xff];
      t2[i] = (t1[i] >>> 8) ^ t0[t1[i] & 0xff];
      t3[i] = (t2[i] >>> 8) ^ t0[t2[i] & 0xff];
    }
  }
  const [t0, t1, t2, t3] = crcTables;
  let c = 0xffffffff;
  let i = 0;
  for (const end = bytes.length - 3; i < end; i += 4) {
    c ^= bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    c = t3[c & 0xff] ^ t2[(c >>> 8) & 0xff] ^ t1[(c >>> 16) & 0xff] ^ t0[c >>> 24];
  }
  for (; i < bytes.length; i++) c = t0[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function asBytes(data, what) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new NNVMError(`${what} must be an ArrayBuffer or a typed array, got ${describe(data)}`);
}

function describe(value) {
  if (value === null || value === undefined) return String(value);
  return value.constructor ? value.constructor.name : typeof value;
}

function specText(spec) {
  return `${spec.dtype}[${spec.shape.join(", ")}]`;
}

async function compile(source) {
  try {
    if (source instanceof WebAssembly.Module) return source;
    if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
      return await WebAssembly.compile(asBytes(source, "the model"));
    }
    // Only now: in node, the first look at the global Response loads fetch (~80 ms).
    if (typeof Response !== "undefined" && source instanceof Response) {
      if (!source.ok) throw new NNVMError(`fetching the model failed: HTTP ${source.status}`);
      if (WebAssembly.compileStreaming && source.headers.get("Content-Type") === "application/wasm") {
        return await WebAssembly.compileStreaming(source);
      }
      return await WebAssembly.compile(await source.arrayBuffer());
    }
    return await WebAssembly.compile(asBytes(source, "the model"));
  } catch (err) {
    if (err instanceof NNVMError) throw err;
    const hint = WebAssembly.validate(SIMD_PROBE)
      ? ""
      : " (this engine has no WebAssembly SIMD: build with target='wasm -mattr=-simd128')";
    throw new NNVMError(`not a loadable nnvm wasm module: ${err.message}${hint}`);
  }
}

/** Parse and check a params file against the model's table: each param's bytes, in its order. */
function parseParams(bytes, model) {
  const fail = (what, pos) => {
    throw new NNVMError(`params: ${what}${pos === undefined ? "" : ` (at byte ${pos})`}`);
  };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let size = bytes.length;
  let pos = 0;
  const need = (n, what) => {
    if (n < 0 || pos + n > size) fail(`truncated while reading ${what}`, pos);
  };
  need(16, "the header");
  const magic = String.fromCharCode(...bytes.subarray(0, 8));
  if (magic !== MAGIC) fail("bad magic: not an nnvm params file", 0);
  const version = view.getUint32(8, true);
  const count = view.getUint32(12, true);
  pos = 16;
  if (version !== 1 && version !== 2 && version !== 3) fail(`unsupported version ${version}`, 8);
  if (version === 3) {
    need(4, "the checksum");
    const stored = view.getUint32(size - 4, true);
    size -= 4;
    if (crc32(bytes.subarray(0, size)) !== stored) fail("checksum mismatch: the file is corrupt");
  }
  if (version >= 2) {
    need(HASH_BYTES, "the model hash");
    const raw = bytes.subarray(pos, pos + HASH_BYTES);
    const end = raw.indexOf(0);
    const hash = new TextDecoder().decode(end < 0 ? raw : raw.subarray(0, end));
    pos += HASH_BYTES;
    if (hash && hash !== model.modelHash) {
      fail(`these params belong to model ${hash}, this module is model ${model.modelHash}`);
    }
  }
  const found = new Array(model.params.length).fill(null);
  const byName = new Map(model.params.map((p, i) => [p.name, i]));
  for (let t = 0; t < count; t++) {
    need(4, `the name length of tensor #${t}`);
    const nameLen = view.getUint32(pos, true);
    pos += 4;
    need(nameLen, `the name of tensor #${t}`);
    const name = new TextDecoder().decode(bytes.subarray(pos, pos + nameLen));
    pos += nameLen;
    need(8, `the dtype and rank of ${JSON.stringify(name)}`);
    const code = view.getUint32(pos, true);
    const ndim = view.getUint32(pos + 4, true);
    pos += 8;
    if (code >= DTYPES.length) fail(`tensor ${JSON.stringify(name)} has unknown dtype code ${code}`, pos);
    if (ndim > 64) fail(`tensor ${JSON.stringify(name)} has implausible rank ${ndim}`, pos);
    need(8 * ndim + 8, `the shape of ${JSON.stringify(name)}`);
    const dims = [];
    let expect = BigInt(DTYPES[code][1]);
    for (let k = 0; k < ndim; k++) {
      const d = view.getBigInt64(pos + 8 * k, true);
      if (d < 0n) fail(`tensor ${JSON.stringify(name)} has a negative dimension`, pos);
      dims.push(Number(d));
      expect *= d;
    }
    pos += 8 * ndim;
    const nbytes = view.getBigUint64(pos, true);
    pos += 8;
    if (nbytes !== expect) {
      fail(`tensor ${JSON.stringify(name)} declares ${nbytes} bytes, its shape needs ${expect}`, pos);
    }
    pos = Math.ceil(pos / ALIGN) * ALIGN;
    need(Number(nbytes), `the data of ${JSON.stringify(name)}`);
    const index = byName.get(name);
    if (index !== undefined) {
      const want = model.params[index];
      if (DTYPES[code][0] !== want.dtype || dims.join() !== want.shape.join()) {
        fail(
          `param ${JSON.stringify(name)} is ${DTYPES[code][0]}[${dims.join(", ")}], ` +
            `the model expects ${specText(want)}`,
        );
      }
      found[index] = bytes.subarray(pos, pos + Number(nbytes));
    }
    pos += Number(nbytes);
  }
  if (pos !== size) fail(`${size - pos} trailing bytes after the last tensor`, pos);
  const missing = model.params.filter((_, i) => found[i] === null).map((p) => p.name);
  if (missing.length) fail(`missing ${missing.map((n) => JSON.stringify(n)).join(", ")}`);
  return found;
}

/** A compiled model instance: its input/output/param tables, buffers in wasm memory, run(). */
export class Model {
  constructor(instance) {
    const x = instance.exports;
    for (const name of ["memory", "nnvm_wasm_alloc", "nnvm_wasm_run", "nnvm_wasm_count"]) {
      if (!(name in x)) throw new NNVMError(`not an nnvm wasm module: it exports no ${name}`);
    }
    this._x = x;
    this.modelHash = this._string(x.nnvm_wasm_model_hash());
    this.target = this._string(x.nnvm_wasm_target());
    this.inputs = this._table(INPUTS);
    this.outputs = this._table(OUTPUTS);
    this.params = this._table(PARAMS);
    this._arena = this._alloc(x.nnvm_wasm_arena_bytes(), "the arena");
    for (const spec of [...this.inputs, ...this.outputs, ...this.params]) {
      spec.ptr = this._alloc(spec.nbytes, spec.name);
    }
    this._inputPtrs = this._pointers(this.inputs);
    this._outputPtrs = this._pointers(this.outputs);
    this._paramPtrs = this._pointers(this.params);
    this._inputSet = new Array(this.inputs.length).fill(false);
    this._paramsLoaded = this.params.length === 0;
    this._first = true;
  }

  _string(address) {
    const ptr = address >>> 0; // wasm32 pointers come back as signed i32s
    const mem = new Uint8Array(this._x.memory.buffer);
    let end = ptr;
    while (end < mem.length && mem[end] !== 0) end++;
    return new TextDecoder().decode(mem.subarray(ptr, end));
  }

  _table(which) {
    const x = this._x;
    const out = [];
    for (let k = 0; k < x.nnvm_wasm_count(which); k++) {
      const code = x.nnvm_wasm_dtype(which, k);
      const shape = [];
      for (let d = 0; d < x.nnvm_wasm_ndim(which, k); d++) shape.push(x.nnvm_wasm_dim(which, k, d));
      const [dtype, itemsize, array] = DTYPES[code];
      const size = shape.reduce((a, b) => a * b, 1);
      const name = this._string(x.nnvm_wasm_name(which, k));
      out.push({ name, dtype, shape, size, itemsize, nbytes: size * itemsize, array });
    }
    return out;
  }

  _alloc(nbytes, what) {
    const ptr = nbytes < 2 ** 32 - 64 ? this._x.nnvm_wasm_alloc(Math.max(nbytes, 1)) >>> 0 : 0;
    if (ptr === 0) throw new NNVMError(`out of wasm memory allocating ${nbytes} bytes for ${what}`);
    return ptr;
  }

  _pointers(specs) {
    const ptr = this._alloc(4 * specs.length, "a pointer table");
    const table = new Uint32Array(this._x.memory.buffer, ptr, specs.length);
    specs.forEach((s, k) => (table[k] = s.ptr));
    return ptr;
  }

  _bytes(spec) {
    return new Uint8Array(this._x.memory.buffer, spec.ptr, spec.nbytes);
  }

  _find(specs, key, what) {
    if (typeof key === "number") {
      if (Number.isInteger(key) && key >= 0 && key < specs.length) return key;
      throw new NNVMError(`no ${what} #${key}: the model has ${specs.length}`);
    }
    const k = specs.findIndex((s) => s.name === key);
    if (k < 0) {
      throw new NNVMError(
        `no ${what} named ${JSON.stringify(key)}: the model's are ${specs.map((s) => JSON.stringify(s.name)).join(", ")}`,
      );
    }
    return k;
  }

  /** Load a params file (ArrayBuffer or Uint8Array); nothing changes when it is refused. */
  loadParams(data) {
    const found = parseParams(asBytes(data, "the params"), this);
    found.forEach((bytes, k) => this._bytes(this.params[k]).set(bytes));
    this._paramsLoaded = true;
    this._first = true;
  }

  /** Copy one input in: `key` is its name or index, `value` a typed array of its dtype and size. */
  setInput(key, value) {
    const k = this._find(this.inputs, key, "input");
    const spec = this.inputs[k];
    const where = `input ${JSON.stringify(spec.name)} (${specText(spec)})`;
    if (!(value instanceof spec.array)) {
      throw new NNVMError(`${where} takes a ${spec.array.name}, got ${describe(value)}`);
    }
    if (value.length !== spec.size) {
      throw new NNVMError(`${where} takes ${spec.size} elements, got ${value.length}`);
    }
    this._bytes(spec).set(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    this._inputSet[k] = true;
  }

  /** Run the model; `inputs` (optional) maps names to typed arrays. Returns every output. */
  run(inputs = {}) {
    if (!this._paramsLoaded) throw new NNVMError("run: load the params first (model.loadParams)");
    for (const [name, value] of Object.entries(inputs)) this.setInput(name, value);
    const unset = this.inputs.filter((_, k) => !this._inputSet[k]).map((s) => JSON.stringify(s.name));
    if (unset.length) throw new NNVMError(`run: input ${unset.join(", ")} not set`);
    let rc;
    try {
      rc = this._x.nnvm_wasm_run(this._paramPtrs, this._arena, this._inputPtrs, this._outputPtrs, this._first ? 1 : 0);
    } catch (err) {
      const why = this._x.nnvm_wasm_last_error ? this._string(this._x.nnvm_wasm_last_error()) : "";
      throw new NNVMError(`run: the model trapped: ${why || err.message}`);
    }
    if (rc !== 0) throw new NNVMError(`run: the model failed (code ${rc})`);
    this._first = false;
    return this.outputs.map((_, k) => this.getOutput(k));
  }

  /** A copy of output `key` (index or name, "output0"...) as a typed array of its dtype. */
  getOutput(key) {
    const spec = this.outputs[this._find(this.outputs, key, "output")];
    return new spec.array(this._bytes(spec).slice().buffer);
  }
}

/**
 * Compile and instantiate a model: `wasm` is the module's bytes (ArrayBuffer, typed array), a
 * fetch() Response or a WebAssembly.Module; `params` (optional) the model.params bytes.
 */
export async function loadModel(wasm, params) {
  const module = await compile(wasm);
  let instance;
  try {
    instance = await WebAssembly.instantiate(module, {});
  } catch (err) {
    throw new NNVMError(`instantiating the model failed: ${err.message}`);
  }
  const model = new Model(instance);
  if (params !== undefined) model.loadParams(params);
  return model;
}
