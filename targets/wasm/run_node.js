// Run a wasm model in node from files, through nnvm.js:
//   node run_node.js model.wasm model.params in0.bin ... -o out0.bin ... [--repeat N]
// Inputs are raw little-endian tensors in the graph's input order (sizes are checked by
// nnvm.js); outputs are written the same way. Prints one JSON line: the compile + instantiate
// time and the run times in milliseconds. Exits 1 with the error's message on bad input.
import { readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { loadModel } from "./nnvm.js";

function parse(argv) {
  const args = { files: [], outs: [], repeat: 1 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "-o") args.outs.push(argv[++i]);
    else if (argv[i] === "--repeat") args.repeat = Number(argv[++i]);
    else args.files.push(argv[i]);
  }
  if (args.files.length < 2 || !(args.repeat >= 1)) {
    throw new Error("usage: node run_node.js model.wasm model.params in.bin... -o out.bin... [--repeat N]");
  }
  return args;
}

function typed(spec, bytes) {
  const aligned = new Uint8Array(bytes.length);
  aligned.set(bytes);
  return new spec.array(aligned.buffer, 0, Math.floor(bytes.length / spec.itemsize));
}

async function main() {
  const args = parse(process.argv.slice(2));
  const [wasmPath, paramsPath, ...inputPaths] = args.files;
  const wasm = readFileSync(wasmPath);
  const t0 = performance.now();
  const model = await loadModel(wasm);
  const instantiateMs = performance.now() - t0;
  model.loadParams(readFileSync(paramsPath));
  if (inputPaths.length !== model.inputs.length) {
    throw new Error(`the model takes ${model.inputs.length} inputs, got ${inputPaths.length} files`);
  }
  inputPaths.forEach((p, k) => model.setInput(k, typed(model.inputs[k], readFileSync(p))));
  const runMs = [];
  let outputs;
  for (let r = 0; r < args.repeat; r++) {
    const t = performance.now();
    outputs = model.run();
    runMs.push(performance.now() - t);
  }
  args.outs.forEach((p, k) => writeFileSync(p, new Uint8Array(outputs[k].buffer)));
  console.log(JSON.stringify({ instantiate_ms: instantiateMs, run_ms: runMs, target: model.target }));
}

main().catch((err) => {
  console.error(`${err.name}: ${err.message}`);
  process.exit(1);
});
