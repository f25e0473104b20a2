// quantize-int8 alone: a dense + bias from a calibration file and the weights in --params
// (a relu reads it: an anchor whose value the graph returns is dequantized from int32 instead).
// RUN: python -c "import numpy as np; from nnvm.support.params import save_params_file; save_params_file('%t.params', {'w': np.array([[1, -0.5, 0.25, 0], [0.5, 0.5, -1, 2], [0, 0, 0, 0]], np.float32), 'b': np.array([0.5, -1, 0.25], np.float32)})"
// RUN: nnvm-opt %s --params %t.params --params-out %t.shift.params -p 'quantize-int8{calibration="%S/Inputs/dense.json" requant=shift skip_first=false}' | filecheck %s --check-prefix=SHIFT
// RUN: python -c "from nnvm.support.params import load_params_file as l; p = l('%t.shift.params'); print(sorted(p)); print(p['quant.dense0.weight'].tolist(), p['quant.dense0.bias'].tolist(), p['quant.dense0.shift'].tolist())" | filecheck %s --check-prefix=SHIFT-PARAMS
// RUN: nnvm-opt %s --params %t.params --params-out %t.mul.params -p 'quantize-int8{calibration="%S/Inputs/dense.json" skip_first=false}' | filecheck %s --check-prefix=MUL
// RUN: python -c "from nnvm.support.params import load_params_file as l; p = l('%t.mul.params'); print(p['quant.dense0.multiplier'].tolist(), p['quant.dense0.shift'].tolist())" | filecheck %s --check-prefix=MUL-PARAMS
// RUN: nnvm-opt %s --params %t.params -p 'quantize-int8{calibration="%S/Inputs/dense.json"}' | filecheck %s --check-prefix=SKIP
// RUN: not nnvm-opt %s --params %t.params -p 'quantize-int8{calibration="%S/Inputs/none.json"}' 2>&1 | filecheck %s --check-prefix=NOFILE
// RUN: not nnvm-opt %s --params %t.params -p quantize-int8 2>&1 | filecheck %s --check-prefix=NOCAL
// RUN: not nnvm-opt %s -p 'quantize-int8{calibration="%S/Inputs/dense.json" skip_first=false}' 2>&1 | filecheck %s --check-prefix=NOPARAMS
// RUN: not nnvm-opt %s --params %t.params -p 'quantize-int8{calibration="%S/Inputs/other.json" skip_first=false}' 2>&1 | filecheck %s --check-prefix=UNSEEN

// Shift: the input range 2.0 gets the scale 2^-5 (the power of two above 2/127), row 0 of the
// weight 2^-6, the output 2^-4: acc >> 7 after adding 2^6; the zero row keeps the scale 1.
// SHIFT:      %dense0_inv_scale0 = nnvm.constant dense<3.200000e+01> : tensor<f32>
// SHIFT:      %dense0_q0 = nnvm.cast %dense0_clipped0 {to = "int8"} : (tensor<2x4xf32>) -> tensor<2x4xi8>
// SHIFT:      %dense0_weight = nnvm.param "quant.dense0.weight" : tensor<3x4xi8>
// SHIFT:      nnvm.dense %dense0_acc_in0, %dense0_acc_weight : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// SHIFT-NEXT: %dense0_acc = nnvm.cast %dense0_acc_float {to = "int32"}
// SHIFT-NEXT: %dense0_bias = nnvm.param "quant.dense0.bias" : tensor<3xi32>
// SHIFT-NEXT: %dense0_acc_biased = nnvm.add %dense0_acc, %dense0_bias
// SHIFT-NEXT: %dense0_rounding = nnvm.param "quant.dense0.rounding" : tensor<3xi32>
// SHIFT-NEXT: %dense0_rounded = nnvm.add %dense0_acc_biased, %dense0_rounding
// SHIFT-NEXT: %dense0_shift = nnvm.param "quant.dense0.shift" : tensor<3xi32>
// SHIFT-NEXT: %dense0_shifted = nnvm.bit_shift %dense0_rounded, %dense0_shift {direction = "right"} : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// SHIFT-NEXT: %dense0_saturated = nnvm.clip %dense0_shifted {min = -128.0, max = 127.0}
// SHIFT-NEXT: %dense0_out_q = nnvm.cast %dense0_saturated {to = "int8"}
// SHIFT:      %dense0_out_scale = nnvm.constant dense<6.250000e-02> : tensor<f32>
// SHIFT-NOT:  nnvm.bias_add
// SHIFT:      nnvm.relu %dense0_dequantized
// SHIFT-PARAMS: ['quant.dense0.bias', 'quant.dense0.rounding', 'quant.dense0.shift', 'quant.dense0.weight']
// SHIFT-PARAMS: {{\[\[}}64, -32, 16, 0], [16, 16, -32, 64], [0, 0, 0, 0]] [1024, -1024, 8] [7, 6, 1]

// Multiplier: (i64(acc) * m + 2^(n-1)) >> n, m in [2^30, 2^31).
// MUL:      %dense0_acc64 = nnvm.cast %dense0_acc_biased {to = "int64"}
// MUL-NEXT: %dense0_multiplier = nnvm.param "quant.dense0.multiplier" : tensor<3xi64>
// MUL-NEXT: %dense0_scaled = nnvm.mul %dense0_acc64, %dense0_multiplier
// MUL:      nnvm.bit_shift %dense0_rounded, %dense0_shift {direction = "right"} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// MUL-PARAMS: [{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}] [{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}]

// skip_first (the default) leaves the first anchor, here the only one, in float.
// SKIP:     %d = nnvm.dense %x, %w
// SKIP-NOT: int8

// NOFILE: error: cannot read calibration {{.*}}none.json
// NOCAL: error: quantize-int8 needs calibration=FILE
// NOPARAMS: error: quantize-int8 needs the weight "w": it is not in the params store
// UNSEEN: error: calibration has no range for tensor 'dense:0/out' {{.*}} never seen
// CHECK-NOT: Traceback
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = nnvm.param "w" : tensor<3x4xf32>
  %b = nnvm.param "b" : tensor<3xf32>
  %d = nnvm.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %y = nnvm.bias_add %d, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = nnvm.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
