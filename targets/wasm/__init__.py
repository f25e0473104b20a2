"""The wasm32 target: kernels as WebAssembly, linked with the generated entry point into one
`.wasm` that the JavaScript runtime nnvm.js runs in node or a browser."""
