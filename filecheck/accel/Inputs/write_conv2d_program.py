"""Write the accel program of a small conv2d (32->16 channels, 3x3, pad 1, on 4x4, two virtual
threads) as an instruction stream and a micro-op stream: `write_conv2d_program.py INSNS UOPS`."""

import sys

import numpy as np

from nnvm.targets.accel.config import DEFAULT_CONFIG
from nnvm.targets.accel.conv2d_program import conv2d_program
from nnvm.targets.accel.isa import encode_insns
from nnvm.targets.accel.tiling import Conv2dLayer

layer = Conv2dLayer(1, 32, 4, 4, 16, 3, 3, 1, 1)
x, w = np.zeros((1, 32, 4, 4), np.int8), np.zeros((16, 32, 3, 3), np.int8)
program = conv2d_program(DEFAULT_CONFIG, layer, x, w, shift=8, relu=True, virtual_threads=2)
with open(sys.argv[1], "wb") as f:
    f.write(encode_insns(program.insns).tobytes())
with open(sys.argv[2], "wb") as f:
    f.write(program.region("uop").tobytes())
