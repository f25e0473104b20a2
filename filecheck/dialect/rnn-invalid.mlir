// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the recurrent ops (ONNX operand shapes, attributes).

func.func @lstm_x_rank(%a0: tensor<5x2xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: X must be 3-D, got rank 2}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4} : (tensor<5x2xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_w(%a0: tensor<5x2x3xf32>, %a1: tensor<1x12x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: W must have shape [1, 16, 3], got [1, 12, 3]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_r(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x3xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: R must have shape [1, 16, 4], got [1, 16, 3]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x3xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_b(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x16xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: B must have shape [1, 32], got [1, 16]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x16xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_state(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<2x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: initial_c must have shape [1, 2, 4], got [2, 2, 4]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<2x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_peephole(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x16xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: P must have shape [1, 12], got [1, 16]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x16xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_dirs(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: W must have shape [2, 16, 3], got [1, 16, 3]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4, direction = "bidirectional"} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_direction(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: direction must be "forward", "reverse" or "bidirectional", got "backward"}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4, direction = "backward"} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_layout(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: layout must be 0 or 1, got 2}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4, layout = 2} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_hidden(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: hidden_size must be >= 1, got 0}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 0} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_clip(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: clip must be >= 0 (0 disables it)}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4, clip = -1.0} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @lstm_layout_states(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x16x4xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: initial_h must have shape [5, 1, 4], got [1, 2, 4]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4, layout = 1} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @gru_w(%a0: tensor<5x2x3xf32>, %a1: tensor<1x16x3xf32>, %a2: tensor<1x12x4xf32>, %a3: tensor<1x24xf32>, %a4: tensor<1x2x4xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{gru: W must have shape [1, 12, 3], got [1, 16, 3]}}
  %0:2 = nnvm.gru %a0, %a1, %a2, %a3, %a4 {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

func.func @gru_int(%a0: tensor<5x2x3xi32>, %a1: tensor<1x12x3xf32>, %a2: tensor<1x12x4xf32>, %a3: tensor<1x24xf32>, %a4: tensor<1x2x4xf32>) -> tensor<5x1x2x4xi32> {
  // expected-error @+1 {{gru needs float operands, got i32}}
  %0:2 = nnvm.gru %a0, %a1, %a2, %a3, %a4 {hidden_size = 4} : (tensor<5x2x3xi32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xi32>, tensor<1x2x4xi32>)
  func.return %0#0 : tensor<5x1x2x4xi32>
}

// -----

// With recurrent_panel, R is [dirs, 4H/P, H, P] (here 4H = 16 in panels of 8).
func.func @lstm_r_panels(%a0: tensor<5x2x3xf32>, %a1: tensor<1x3x16xf32>, %a2: tensor<1x4x16xf32>, %a3: tensor<1x32xf32>, %a4: tensor<1x2x4xf32>, %a5: tensor<1x2x4xf32>, %a6: tensor<1x12xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{lstm: R must have shape [1, 2, 4, 8], got [1, 4, 16]}}
  %0:3 = nnvm.lstm %a0, %a1, %a2, %a3, %a4, %a5, %a6 {hidden_size = 4, weights_kn = true, recurrent_panel = 8} : (tensor<5x2x3xf32>, tensor<1x3x16xf32>, tensor<1x4x16xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}

// -----

// With weights_kn, a gru's W is [dirs, K, 3H].
func.func @gru_w_kn(%a0: tensor<5x2x3xf32>, %a1: tensor<1x12x3xf32>, %a2: tensor<1x4x12xf32>, %a3: tensor<1x24xf32>, %a4: tensor<1x2x4xf32>) -> tensor<5x1x2x4xf32> {
  // expected-error @+1 {{gru: W must have shape [1, 3, 12], got [1, 12, 3]}}
  %0:2 = nnvm.gru %a0, %a1, %a2, %a3, %a4 {hidden_size = 4, weights_kn = true} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x4x12xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %0#0 : tensor<5x1x2x4xf32>
}
