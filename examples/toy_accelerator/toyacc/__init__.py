"""toyacc: a toy matrix accelerator plugged into nnvm from outside its tree (see
docs/accelerators.md in nnvm): the `toyacc` dialect, the `toyacc-offload` pass, the `toyacc`
target and a numpy simulator as its runtime."""
